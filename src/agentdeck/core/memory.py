"""Memory: what sessions did, kept so the next session starts knowing it.

Pure data and logic, no I/O. The hooks bridge and the runner turn tool calls
into :class:`Observation` records and finished sessions into
:class:`SessionSummary` records; ``memory/`` stores and searches them; the
context builder picks what the next session in the same project is told.
Everything here has already been scrubbed (``core.redact``) before it is built.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentdeck.core.summary import age, short, tool_summary


class MemoryKind(StrEnum):
    OBSERVATION = "observation"
    SUMMARY = "summary"


def new_memory_id(kind: MemoryKind) -> str:
    """``ob…`` for observations, ``su…`` for summaries: the prefix names the table."""
    import secrets  # here: `memory search` reads records and needs no hashlib

    prefix = "ob" if kind is MemoryKind.OBSERVATION else "su"
    return prefix + secrets.token_hex(6)


def kind_of(memory_id: str) -> MemoryKind | None:
    if memory_id.startswith("ob"):
        return MemoryKind.OBSERVATION
    if memory_id.startswith("su"):
        return MemoryKind.SUMMARY
    return None


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One tool call of a session, as memory keeps it."""

    id: str
    project: str  # absolute project directory
    session_id: str  # Claude Code's session id
    agent_id: str | None  # the deck's agent (external or run by agentdeck)
    ts: float
    tool: str
    input_summary: str  # ``Bash(pytest -x)``
    output_excerpt: str  # the start (and end) of the output, scrubbed
    files: tuple[str, ...] = ()  # files the call read or touched
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class SessionSummary:
    """A finished session (or turn), built without spending tokens.

    There is one per session: a later Stop replaces the earlier summary.
    ``model_summary`` is set only when the optional model-written summary ran.
    """

    id: str
    project: str
    session_id: str
    agent_id: str | None
    ts: float
    files_changed: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    final_message: str = ""
    request: str = ""  # the session's first prompt, if known
    model_summary: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryHit:
    """A search result: a short index entry; ``memory_get`` gives the record."""

    id: str
    kind: MemoryKind
    project: str
    session_id: str
    ts: float
    title: str  # ``Bash(pytest -x)`` or the summary's first line
    snippet: str  # matched text with the terms marked ``[...]``
    score: float  # higher is better

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the API's, the CLI's ``--json``): the fields, ``kind`` as text."""
        return {
            "id": self.id, "kind": str(self.kind), "project": self.project,
            "session_id": self.session_id, "ts": self.ts, "title": self.title,
            "snippet": self.snippet, "score": self.score,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryHit:
        return cls(**{**data, "kind": MemoryKind(data["kind"])})


# --- building records ---------------------------------------------------------------

WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
EXCERPT_CHARS = 600
MAX_FILES = 30
MAX_COMMANDS = 20
MAX_ERRORS = 10
COMMAND_CHARS = 120
FINAL_CHARS = 1500
REQUEST_CHARS = 300
ERROR_CHARS = 200
# Of a huge output only the head and tail are redacted (cut at whitespace, so no
# secret is cut in two): the excerpt keeps far less anyway. ``<private>`` parts are
# dropped from the whole output first: a block opened in the left-out middle still
# hides what it covers in the tail.
SCRUB_HEAD, SCRUB_TAIL = 150_000, 50_000
_FILE_KEYS = ("file_path", "notebook_path", "path")


def output_text(output: Any) -> str:
    """A tool's output as Claude Code gives it, as readable text.

    Text as is; Bash's ``{"stdout", "stderr"}`` its streams; Read's
    ``{"file": {"content"}}`` the content; Write's ``content``; Edit's
    ``structuredPatch`` the diff lines (never ``originalFile``); Glob's and
    Grep's ``filenames``; content blocks their text (``[image]`` for an image);
    anything else its JSON.
    """
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list | tuple):
        return "\n".join(text for text in map(_block_text, output) if text)
    if isinstance(output, Mapping):
        return _response_text(output)
    return json.dumps(output, ensure_ascii=False, default=str)


def _block_text(block: Any) -> str:
    if isinstance(block, Mapping):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
        if block.get("type") == "image":
            return "[image]"
        if block.get("type") == "tool_result":
            return output_text(block.get("content"))
    return output_text(block)


def _response_text(response: Mapping[str, Any]) -> str:
    if "stdout" in response or "stderr" in response:
        parts = [str(response.get("stdout") or ""), str(response.get("stderr") or "")]
        if response.get("interrupted"):
            parts.append("[interrupted]")
        return "\n".join(p for p in parts if p)
    if response.get("type") == "text" and isinstance(response.get("text"), str):
        return str(response["text"])
    file = response.get("file")
    if isinstance(file, Mapping) and isinstance(file.get("content"), str):
        return str(file["content"])
    for key in ("content", "result", "output", "error"):
        if response.get(key):
            return output_text(response[key])
    patch = response.get("structuredPatch")
    if isinstance(patch, list) and patch:
        hunks = [h.get("lines") for h in patch if isinstance(h, Mapping)]
        return "\n".join(str(line) for lines in hunks if isinstance(lines, list) for line in lines)
    if isinstance(response.get("filenames"), list):
        return "\n".join(str(name) for name in response["filenames"])
    if response.get("filePath"):
        return str(response["filePath"])
    return json.dumps(response, ensure_ascii=False, default=str)


def scrub_window(text: str) -> str:
    """A huge ``text``'s head and tail (cut at whitespace), the rest left out.

    Strip ``<private>`` parts before, not after: the window may leave out the tag
    that opens a block and keep the text it hides.
    """
    if len(text) <= SCRUB_HEAD + SCRUB_TAIL:
        return text
    head, tail = text[:SCRUB_HEAD], text[-SCRUB_TAIL:]
    cut = max(head.rfind(" "), head.rfind("\n"))
    starts = [i for i in (tail.find(" "), tail.find("\n")) if i >= 0]
    head = head[:cut] if cut > 0 else head
    tail = tail[min(starts) :] if starts else tail
    return f"{head}\n…\n{tail}"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start and the end of ``text`` (where errors and summaries usually are)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 3
    return text[:head].rstrip() + "\n…\n" + text[-tail:].lstrip()


def relative_path(path: str, project: str) -> str:
    """``path`` relative to ``project`` when inside it (``.`` for the project itself)."""
    norm = posixpath.normpath(path)
    if not project or not posixpath.isabs(norm):
        return norm
    root = posixpath.normpath(project)
    if norm == root:
        return "."
    prefix = root if root.endswith("/") else root + "/"
    return norm[len(prefix) :] if norm.startswith(prefix) else norm


def files_of(tool_input: Mapping[str, Any], project: str) -> tuple[str, ...]:
    """The files a call names (``file_path``, ``notebook_path``, Glob's and Grep's ``path``)."""
    out = []
    for key in _FILE_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            out.append(relative_path(value.strip(), project))
    return tuple(dict.fromkeys(out))


def make_observation(
    *,
    tool: str,
    tool_input: Mapping[str, Any],
    output: Any,
    is_error: bool,
    project: str,
    session_id: str,
    agent_id: str | None,
    ts: float,
    memory_id: str | None = None,
) -> Observation:
    """One tool call, scrubbed of secrets and ``<private>`` content.

    ``output`` is Claude Code's ``tool_response`` (see :func:`output_text`). An
    input that is not a dict is kept under ``"input"`` (nothing is lost).
    """
    raw = tool_input if isinstance(tool_input, Mapping) else {"input": tool_input}
    # Imported here: the CLI loads these types at every start; the patterns compile once used.
    from agentdeck.core.event_scrub import tool_name
    from agentdeck.core.private import strip_private
    from agentdeck.core.redact import redact, scrub_value

    clean_input = scrub_value(raw)
    tool = tool_name(tool)  # the model's word: a plain name with no secret, or a mark
    return Observation(
        id=memory_id or new_memory_id(MemoryKind.OBSERVATION),
        project=project,
        session_id=session_id,
        agent_id=agent_id,
        ts=ts,
        tool=tool,
        input_summary=tool_summary(tool, clean_input),
        output_excerpt=excerpt(redact(scrub_window(strip_private(output_text(output))))),
        files=files_of(clean_input, project),
        is_error=is_error,
    )


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _command_of(observation: Observation) -> str:
    """``Bash(pytest -x)`` → ``pytest -x``."""
    summary = observation.input_summary
    inner = summary[len(observation.tool) + 1 : -1] if summary.endswith(")") else summary
    return short(inner, COMMAND_CHARS)


def summarize_session(
    observations: Sequence[Observation],
    *,
    final_message: str,
    request: str,
    project: str,
    session_id: str,
    agent_id: str | None,
    ts: float,
    memory_id: str | None = None,
) -> SessionSummary:
    """What the session did, from its observations (in time order): no tokens spent.

    Files changed come from the write tools that succeeded; commands from Bash;
    errors are the first line of each failed call's output, with the call.
    """
    from agentdeck.core.redact import scrub  # see make_observation

    ordered = sorted(observations, key=lambda o: o.ts)
    files = [f for o in ordered if o.tool in WRITE_TOOLS and not o.is_error for f in o.files]
    commands = [_command_of(o) for o in ordered if o.tool == "Bash"]
    errors = [
        short(f"{o.input_summary}: {_first_line(o.output_excerpt) or 'failed'}", ERROR_CHARS)
        for o in ordered
        if o.is_error
    ]
    return SessionSummary(
        id=memory_id or new_memory_id(MemoryKind.SUMMARY),
        project=project,
        session_id=session_id,
        agent_id=agent_id,
        ts=ts,
        files_changed=tuple(dict.fromkeys(files))[:MAX_FILES],
        commands=tuple(dict.fromkeys(commands))[:MAX_COMMANDS],
        errors=tuple(dict.fromkeys(errors))[:MAX_ERRORS],
        final_message=excerpt(scrub(final_message), FINAL_CHARS),
        request=short(scrub(request), REQUEST_CHARS) if request.strip() else "",
    )


def summary_title(summary: SessionSummary) -> str:
    return short(
        _first_line(summary.request) or _first_line(summary.final_message) or "a session", 120
    )


def render_summary(summary: SessionSummary) -> str:
    """The summary as people read it and search indexes it; line 1 is its title."""
    lines = [summary_title(summary)]
    if summary.model_summary:
        lines += ["", summary.model_summary.strip()]
    if summary.final_message and summary.final_message != summary.request:
        lines += ["", "Outcome: " + summary.final_message]
    for label, items in (
        ("Files changed", summary.files_changed),
        ("Commands run", summary.commands),
        ("Errors met", summary.errors),
    ):
        if items:
            lines += ["", f"{label}:"] + [f"- {item}" for item in items]
    return "\n".join(lines)


# --- telling the next session ----------------------------------------------------------

CONTEXT_HEADING = "Memory from earlier sessions in this project (agentdeck):"
_CHARS_PER_TOKEN = 3.5


def estimate_tokens(text: str) -> int:
    """A conservative token count (no tokenizer here): about 3.5 characters each."""
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _summary_entry(summary: SessionSummary, now: float) -> str:
    lines = [f"- Session {age(now - summary.ts)} ago: {summary_title(summary)}"]
    if summary.model_summary:
        lines.append("  " + short(summary.model_summary, 400))
    elif summary.final_message and summary.final_message != summary.request:
        lines.append("  Outcome: " + short(summary.final_message, 300))
    if summary.files_changed:
        lines.append("  Files changed: " + short(", ".join(summary.files_changed), 200))
    if summary.commands:
        lines.append("  Commands: " + short("; ".join(summary.commands[:6]), 200))
    if summary.errors:
        lines.append("  Errors: " + short("; ".join(summary.errors[:3]), 250))
    return "\n".join(lines)


def _observation_entry(observation: Observation, now: float) -> str:
    what = observation.input_summary
    if observation.is_error:
        what += " failed: " + short(_first_line(observation.output_excerpt) or "error", 160)
    elif observation.files:
        what = "changed " + short(", ".join(observation.files), 160)
    return f"- {age(now - observation.ts)} ago: {what}"


NOTABLE_HEADING = "Recent notable tool calls:"


def build_context(
    summaries: Sequence[SessionSummary],
    observations: Sequence[Observation],
    *,
    budget_tokens: int,
    project: str,
    now: float,
) -> str:
    """What a new session in ``project`` is told at its start, within the budget.

    The heading, then the session summaries newest first (one that does not fit
    whole is told by its first line), then notable tool calls (errors met,
    files changed) of sessions no summary covers, newest first, each once. It
    stops at the first entry that does not fit: ``estimate_tokens(result) <=
    budget_tokens`` always. Records of other projects are left out. "" when
    there is nothing to tell (or no room to tell it).
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, not {budget_tokens}")
    here = posixpath.normpath(project) if project else project

    def ours(record: Observation | SessionSummary) -> bool:
        return not project or posixpath.normpath(record.project) == here

    told = _Told(CONTEXT_HEADING, budget_tokens)
    mine = sorted((s for s in summaries if ours(s)), key=lambda s: s.ts, reverse=True)
    for summary in mine:
        entry = _summary_entry(summary, now)
        if not (told.add(entry) or told.add(entry.split("\n", 1)[0])):
            return told.text()
    covered = {s.session_id for s in mine}
    heading = NOTABLE_HEADING
    for line in dict.fromkeys(
        _observation_entry(o, now)
        for o in sorted(observations, key=lambda o: o.ts, reverse=True)
        if ours(o) and o.session_id not in covered and (o.is_error or o.tool in WRITE_TOOLS)
    ):
        if not told.add(f"{heading}\n{line}" if heading else line):
            break
        heading = ""
    return told.text()


class _Told:
    """Lines told so far, and the room left (counted on the length: no re-joining)."""

    def __init__(self, heading: str, budget_tokens: int) -> None:
        self.lines = [heading]
        self.size = len(heading)
        self.budget = budget_tokens

    def add(self, entry: str) -> bool:
        size = self.size + 1 + len(entry)
        if math.ceil(size / _CHARS_PER_TOKEN) > self.budget:
            return False
        self.lines.append(entry)
        self.size = size
        return True

    def text(self) -> str:
        return "\n".join(self.lines) if len(self.lines) > 1 else ""
