"""Scenario files for the scripted model: the data types and their validation.

Pure: :func:`parse_scenario` turns already-parsed YAML into frozen dataclasses or
raises :class:`~agentdeck.errors.ScenarioError`. Reading files lives in ``loader``.

Error messages carry two positions: ``turn N`` (1-based, for humans) in the
:class:`ScenarioError` prefix, and a YAML locator such as ``turns[2].reply[0]``
(0-based list indexes) in the problem text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentdeck.core.quoting import key_shown
from agentdeck.errors import ScenarioError

SCENARIO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
WHEN_KEYS = (
    "tool_result_contains",
    "tool_result_matches",
    "user_text_contains",
    "system_prompt_contains",
    "first_user_text_contains",
)
BLOCK_KINDS = ("text", "tool_use", "thinking")
FAULT_KINDS = ("http_status", "malformed_sse", "disconnect", "sse_error", "hang")


@dataclass(frozen=True)
class Condition:
    """All given substrings must occur in their part of the request (``None`` = any)."""

    tool_result_contains: str | None = None
    tool_result_matches: str | None = None  # a regular expression, searched
    user_text_contains: str | None = None
    system_prompt_contains: str | None = None
    first_user_text_contains: str | None = None


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ThinkingBlock:
    thinking: str


@dataclass(frozen=True)
class ToolUseBlock:
    name: str
    input: Mapping[str, Any]
    id: str | None = None


Block = TextBlock | ThinkingBlock | ToolUseBlock


@dataclass(frozen=True)
class Turn:
    """One scripted model response; ``when`` gates it, ``None`` always holds.
    A ``repeat`` turn answers every request its ``when`` holds for, until one
    it does not (a model polling, say, or waiting again)."""

    reply: tuple[Block, ...]
    when: Condition | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    repeat: bool = False


@dataclass(frozen=True)
class Conversation:
    """Turns for requests that are not the main conversation (e.g. a subagent)."""

    when: Condition
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Fault:
    """Misbehaviour for the ``on_request``-th ``/v1/messages`` POST (1-based)."""

    on_request: int
    times: int = 1
    always: bool = False
    delay: float = 0.0
    http_status: int | None = None
    retry_after: float | None = None
    message: str | None = None
    malformed_sse: bool = False
    disconnect: bool = False
    sse_error: str | None = None
    hang: bool = False

    def applies_to(self, n: int) -> bool:
        if n < self.on_request:
            return False
        return self.always or n < self.on_request + self.times

    @property
    def kind(self) -> str:
        """A short label for the request log, e.g. ``http_status=429`` or ``delay``."""
        if self.http_status is not None:
            return f"http_status={self.http_status}"
        if self.sse_error is not None:
            return f"sse_error={self.sse_error}"
        for flag in ("malformed_sse", "disconnect", "hang"):
            if getattr(self, flag):
                return flag
        return "delay"


@dataclass(frozen=True)
class Scenario:
    name: str
    turns: tuple[Turn, ...]
    description: str = ""
    match: Condition | None = None
    workspace_files: Mapping[str, str] = field(default_factory=dict)
    conversations: tuple[Conversation, ...] = ()
    faults: tuple[Fault, ...] = ()
    source: str = "<memory>"


class _Ctx:
    """Where we are in the file, so every error names the file and the turn."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, problem: str, *, turn: int | None = None) -> ScenarioError:
        return ScenarioError(self.file, problem, turn=turn)


def _mapping(ctx: _Ctx, value: Any, where: str, turn: int | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.fail(f"{where}: expected a mapping, got {type(value).__name__}", turn=turn)
    return value


def _only_keys(
    ctx: _Ctx, data: Mapping[str, Any], allowed: tuple[str, ...], where: str, turn: int | None
) -> None:
    # A key is shown only when it looks like one: never a file's contents.
    unknown = sorted({key_shown(k) for k in data if k not in allowed})
    if unknown:
        raise ctx.fail(
            f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})",
            turn=turn,
        )


def _seconds(ctx: _Ctx, value: Any, where: str, turn: int | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ctx.fail(f"{where}: expected a number of seconds >= 0, got {value!r}", turn=turn)
    return float(value)


def _string(ctx: _Ctx, value: Any, where: str, turn: int | None) -> str:
    if not isinstance(value, str):
        raise ctx.fail(f"{where}: expected a string, got {type(value).__name__}", turn=turn)
    return value


def _condition(ctx: _Ctx, value: Any, where: str, turn: int | None) -> Condition:
    data = _mapping(ctx, value, where, turn)
    unknown = sorted({key_shown(k) for k in data if k not in WHEN_KEYS})
    if unknown:
        raise ctx.fail(
            f"{where}: unknown when key(s) {', '.join(unknown)} (allowed: {', '.join(WHEN_KEYS)})",
            turn=turn,
        )
    if not data:
        raise ctx.fail(f"{where}: empty condition", turn=turn)
    values = {k: _string(ctx, v, f"{where}.{k}", turn) for k, v in data.items()}
    pattern = values.get("tool_result_matches")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ctx.fail(
                f"{where}.tool_result_matches: not a regular expression: {exc}", turn=turn
            ) from None
    return Condition(**values)


def _block(ctx: _Ctx, value: Any, where: str, turn: int) -> Block:
    data = _mapping(ctx, value, where, turn)
    if len(data) != 1:
        raise ctx.fail(
            f"{where}: a reply block has exactly one key, its kind "
            f"({', '.join(BLOCK_KINDS)}); got {sorted(map(str, data))}",
            turn=turn,
        )
    ((kind, body),) = data.items()
    if kind == "text":
        return TextBlock(_string(ctx, body, f"{where}.text", turn))
    if kind == "thinking":
        return ThinkingBlock(_string(ctx, body, f"{where}.thinking", turn))
    if kind != "tool_use":
        raise ctx.fail(
            f"{where}: unknown block kind {kind!r} (expected one of {', '.join(BLOCK_KINDS)})",
            turn=turn,
        )
    spec = _mapping(ctx, body, f"{where}.tool_use", turn)
    _only_keys(ctx, spec, ("name", "input", "id"), f"{where}.tool_use", turn)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ctx.fail(f"{where}.tool_use: missing or empty 'name'", turn=turn)
    if "input" not in spec:
        raise ctx.fail(f"{where}.tool_use: missing 'input' (use {{}} for none)", turn=turn)
    tool_input = dict(_mapping(ctx, spec["input"], f"{where}.tool_use.input", turn))
    tool_id = spec.get("id")
    if tool_id is not None:
        tool_id = _string(ctx, tool_id, f"{where}.tool_use.id", turn)
    return ToolUseBlock(name=name, input=tool_input, id=tool_id)


def _turn(ctx: _Ctx, value: Any, where: str, turn: int) -> Turn:
    data = _mapping(ctx, value, where, turn)
    _only_keys(ctx, data, ("reply", "when", "delay", "chunk_delay", "repeat"), where, turn)
    reply = data.get("reply")
    if reply is None:
        raise ctx.fail(f"{where}: turn has no 'reply'", turn=turn)
    if not isinstance(reply, list) or not reply:
        raise ctx.fail(f"{where}.reply: expected a non-empty list of blocks", turn=turn)
    blocks = tuple(_block(ctx, b, f"{where}.reply[{i}]", turn) for i, b in enumerate(reply))
    when = _condition(ctx, data["when"], f"{where}.when", turn) if "when" in data else None
    repeat = data.get("repeat", False)
    if not isinstance(repeat, bool):
        raise ctx.fail(f"{where}.repeat: must be true or false", turn=turn)
    if repeat and when is None:
        raise ctx.fail(f"{where}: a repeat turn needs 'when' (else it would never end)", turn=turn)
    return Turn(
        repeat=repeat,
        reply=blocks,
        when=when,
        delay=_seconds(ctx, data.get("delay", 0), f"{where}.delay", turn),
        chunk_delay=_seconds(ctx, data.get("chunk_delay", 0), f"{where}.chunk_delay", turn),
    )


def _turns(ctx: _Ctx, value: Any, where: str) -> tuple[Turn, ...]:
    if not isinstance(value, list) or not value:
        raise ctx.fail(f"{where}: expected a non-empty list of turns")
    return tuple(_turn(ctx, t, f"{where}[{i}]", i + 1) for i, t in enumerate(value))


def _fault(ctx: _Ctx, value: Any, where: str) -> Fault:
    data = _mapping(ctx, value, where)
    allowed = ("on_request", "times", "always", "delay", "retry_after", "message", *FAULT_KINDS)
    _only_keys(ctx, data, allowed, where, None)
    on_request = data.get("on_request")
    if isinstance(on_request, bool) or not isinstance(on_request, int) or on_request < 1:
        raise ctx.fail(f"{where}: 'on_request' must be an integer >= 1 (1-based request count)")
    times = data.get("times", 1)
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        raise ctx.fail(f"{where}: 'times' must be an integer >= 1")
    for flag in ("always", "malformed_sse", "disconnect", "hang"):
        if not isinstance(data.get(flag, False), bool):
            raise ctx.fail(f"{where}: {flag!r} must be true or false")
    kinds = [k for k in FAULT_KINDS if data.get(k) not in (None, False)]
    if len(kinds) > 1:
        raise ctx.fail(f"{where}: choose one of {', '.join(kinds)}")
    if not kinds and "delay" not in data:
        raise ctx.fail(f"{where}: no fault given (one of {', '.join(FAULT_KINDS)}, or delay)")
    status = data.get("http_status")
    if status is not None and (
        isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599
    ):
        raise ctx.fail(f"{where}: 'http_status' must be an HTTP error status 400-599")
    if "retry_after" in data and status is None:
        raise ctx.fail(f"{where}: 'retry_after' only applies with 'http_status'")
    sse_error = data.get("sse_error")
    if sse_error is not None:
        sse_error = _string(ctx, sse_error, f"{where}.sse_error", None)
    message = data.get("message")
    if message is not None:
        message = _string(ctx, message, f"{where}.message", None)
    retry_after = data.get("retry_after")
    return Fault(
        on_request=on_request,
        times=times,
        always=data.get("always", False),
        delay=_seconds(ctx, data.get("delay", 0), f"{where}.delay", None),
        http_status=status,
        retry_after=None
        if retry_after is None
        else _seconds(ctx, retry_after, f"{where}.retry_after", None),
        message=message,
        malformed_sse=data.get("malformed_sse", False),
        disconnect=data.get("disconnect", False),
        sse_error=sse_error,
        hang=data.get("hang", False),
    )


def _workspace(ctx: _Ctx, value: Any) -> dict[str, str]:
    data = _mapping(ctx, value, "workspace")
    _only_keys(ctx, data, ("files",), "workspace", None)
    files = _mapping(ctx, data.get("files", {}), "workspace.files")
    out: dict[str, str] = {}
    for rel, content in files.items():
        parts = str(rel).replace("\\", "/").split("/")
        if not rel or str(rel).startswith("/") or ".." in parts:
            raise ctx.fail(f"workspace.files: {rel!r} must be a relative path inside the workspace")
        out[str(rel)] = _string(ctx, content, f"workspace.files[{rel!r}]", None)
    return out


TOP_KEYS = ("name", "description", "match", "workspace", "turns", "conversations", "faults")
# The format's own words, which an error may quote though a file holds them.
VOCABULARY = frozenset(
    {*TOP_KEYS, *WHEN_KEYS, *BLOCK_KINDS, *FAULT_KINDS, "reply", "when", "delay", "chunk_delay",
     "repeat", "input", "id", "files", "on_request", "times", "retry_after", "message"}
)  # fmt: skip


def parse_scenario(data: Any, file: str, *, default_name: str | None = None) -> Scenario:
    """Validate parsed YAML; ``file`` is only used to name the source in errors."""
    ctx = _Ctx(file)
    top = _mapping(ctx, data, "top level")
    _only_keys(ctx, top, TOP_KEYS, "top level", None)
    name = top.get("name", default_name)
    if not isinstance(name, str) or not SCENARIO_NAME.match(name):
        raise ctx.fail(f"'name' must match {SCENARIO_NAME.pattern} (it is used in URLs)")
    if "turns" not in top:
        raise ctx.fail("missing 'turns'")
    conversations: list[Conversation] = []
    raw_convs = top.get("conversations", [])
    if not isinstance(raw_convs, list):
        raise ctx.fail("conversations: expected a list")
    for i, conv in enumerate(raw_convs):
        where = f"conversations[{i}]"
        conv_map = _mapping(ctx, conv, where)
        _only_keys(ctx, conv_map, ("when", "turns"), where, None)
        if "when" not in conv_map:
            raise ctx.fail(f"{where}: a conversation needs 'when'")
        conversations.append(
            Conversation(
                when=_condition(ctx, conv_map["when"], f"{where}.when", None),
                turns=_turns(ctx, conv_map.get("turns"), f"{where}.turns"),
            )
        )
    raw_faults = top.get("faults", [])
    if not isinstance(raw_faults, list):
        raise ctx.fail("faults: expected a list")
    return Scenario(
        name=name,
        description=_string(ctx, top.get("description", ""), "description", None),
        match=_condition(ctx, top["match"], "match", None) if "match" in top else None,
        workspace_files=_workspace(ctx, top["workspace"]) if "workspace" in top else {},
        turns=_turns(ctx, top["turns"], "turns"),
        conversations=tuple(conversations),
        faults=tuple(_fault(ctx, f, f"faults[{i}]") for i, f in enumerate(raw_faults)),
        source=file,
    )
