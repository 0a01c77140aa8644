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
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentdeck.core.redact import scrub, scrub_value
from agentdeck.core.summary import short, tool_summary


class MemoryKind(StrEnum):
    OBSERVATION = "observation"
    SUMMARY = "summary"


def new_memory_id(kind: MemoryKind) -> str:
    """``ob…`` for observations, ``su…`` for summaries: the prefix names the table."""
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


# --- building records ---------------------------------------------------------------

WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
EXCERPT_CHARS = 600
MAX_FILES = 30
MAX_COMMANDS = 20
MAX_ERRORS = 10
COMMAND_CHARS = 120
FINAL_CHARS = 1500
REQUEST_CHARS = 300
_FILE_KEYS = ("file_path", "notebook_path", "path")


def output_text(output: Any) -> str:
    """A tool's output as Claude Code gives it (text, Bash's stdout/stderr, a
    file record, content blocks) as readable text."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(output_text(item) for item in output)
    if isinstance(output, dict):
        if "stdout" in output or "stderr" in output:
            parts = (str(output.get("stdout") or ""), str(output.get("stderr") or ""))
            return "\n".join(p for p in parts if p)
        if output.get("type") == "text" and isinstance(output.get("text"), str):
            return str(output["text"])
        file = output.get("file")
        if isinstance(file, dict) and isinstance(file.get("content"), str):
            return str(file["content"])
    return json.dumps(output, ensure_ascii=False, default=str)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start and the end of ``text`` (where errors and summaries usually are)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 3
    return text[:head].rstrip() + "\n…\n" + text[-tail:].lstrip()


def _relative(path: str, project: str) -> str:
    root = project.rstrip("/") + "/"
    return path[len(root) :] if project and path.startswith(root) else path


def files_of(tool_input: dict[str, Any], project: str) -> tuple[str, ...]:
    out = []
    for key in _FILE_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            out.append(_relative(value, project))
    return tuple(dict.fromkeys(out))


def make_observation(
    *,
    tool: str,
    tool_input: dict[str, Any],
    output: Any,
    is_error: bool,
    project: str,
    session_id: str,
    agent_id: str | None,
    ts: float,
    memory_id: str | None = None,
) -> Observation:
    """One tool call, scrubbed of secrets and ``<private>`` content."""
    clean_input = scrub_value(tool_input)
    return Observation(
        id=memory_id or new_memory_id(MemoryKind.OBSERVATION),
        project=project,
        session_id=session_id,
        agent_id=agent_id,
        ts=ts,
        tool=tool,
        input_summary=tool_summary(tool, clean_input),
        output_excerpt=excerpt(scrub(output_text(output))),
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
    """What the session did, from its observations: no tokens spent."""
    files = [f for o in observations if o.tool in WRITE_TOOLS for f in o.files]
    commands = [_command_of(o) for o in observations if o.tool == "Bash"]
    errors = [
        short(f"{o.input_summary}: {_first_line(o.output_excerpt) or 'failed'}", 200)
        for o in observations
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


def age(seconds: float) -> str:
    """``45s``, ``12m``, ``3h``, ``5d``: compact, for tables, index lines and context."""
    secs = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


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
    return f"- {age(now - observation.ts)} ago: {what}"


def build_context(
    summaries: Sequence[SessionSummary],
    observations: Sequence[Observation],
    *,
    budget_tokens: int,
    project: str,
    now: float,
) -> str:
    """What a new session in ``project`` is told at its start, within the budget:
    the newest session summaries first, then notable observations (errors met,
    files changed) that no summary covers. "" when there is nothing to tell."""
    entries = [_summary_entry(s, now) for s in sorted(summaries, key=lambda s: s.ts, reverse=True)]
    covered = {s.session_id for s in summaries}
    notable = [
        o
        for o in sorted(observations, key=lambda o: o.ts, reverse=True)
        if o.session_id not in covered and (o.is_error or o.tool in WRITE_TOOLS)
    ]
    if notable:
        entries.append("Recent notable tool calls:")
        entries += [_observation_entry(o, now) for o in notable]
    out = CONTEXT_HEADING
    for entry in entries:
        candidate = out + "\n" + entry
        if estimate_tokens(candidate) > budget_tokens:
            break
        out = candidate
    out = out.removesuffix("\nRecent notable tool calls:")
    return "" if out == CONTEXT_HEADING or estimate_tokens(out) > budget_tokens else out
