"""Stateless turn selection: which scripted turn answers a Messages API request.

Nothing is remembered between requests. The position in a scenario is
recomputed from the conversation history the client sends: every earlier
top-level assistant message is assumed to be the turn that *would* have been
chosen for the history before it. So many agents can share one server, retries
get the same turn again, and a resumed conversation works on a fresh server.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentdeck.mockmodel.scenario import Condition, Scenario, TextBlock, ToolUseBlock, Turn

Message = Mapping[str, Any]

_REMINDER = "<system-reminder>"
_CWD_PATTERNS = (
    re.compile(r"Primary working directory: *(\S[^\n]*)"),
    re.compile(r"^CWD: *(\S[^\n]*)", re.MULTILINE),
)
# Tool inputs that the CLI insists be absolute paths.
PATH_KEYS = ("file_path", "notebook_path")


@dataclass(frozen=True)
class Selection:
    """The outcome for one request; ``turn_index`` is 0-based, ``None`` = fallback."""

    scenario: Scenario | None
    conversation: int | None = None
    turn_index: int | None = None

    @property
    def turn(self) -> Turn | None:
        if self.scenario is None or self.turn_index is None:
            return None
        return _turns_of(self.scenario, self.conversation)[self.turn_index]


def _turns_of(scenario: Scenario, conversation: int | None) -> tuple[Turn, ...]:
    if conversation is None:
        return scenario.turns
    return scenario.conversations[conversation].turns


def _blocks(message: Message) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and "text" in b
        )
    return ""


def system_text(body: Mapping[str, Any]) -> str:
    """The ``system`` field as one string (it may be a string or text blocks)."""
    return _text_of(body.get("system"))


def user_text(message: Message) -> str | None:
    """The typed text of a user message, skipping CLI reminders; ``None`` if none."""
    if message.get("role") != "user":
        return None
    texts = [
        str(b.get("text", ""))
        for b in _blocks(message)
        if b.get("type") == "text" and not str(b.get("text", "")).lstrip().startswith(_REMINDER)
    ]
    return "\n".join(texts) if texts else None


def tool_result_text(message: Message) -> str | None:
    """All tool_result texts of a user message joined; ``None`` if it has none."""
    if message.get("role") != "user":
        return None
    results = [
        _text_of(b.get("content")) for b in _blocks(message) if b.get("type") == "tool_result"
    ]
    return "\n".join(results) if results else None


def _last(values: Sequence[str | None]) -> str | None:
    for value in reversed(values):
        if value is not None:
            return value
    return None


def condition_holds(cond: Condition, system: str, prefix: Sequence[Message]) -> bool:
    """Whether every key of ``cond`` holds for the history ``prefix``."""
    checks: list[tuple[str, str | None]] = []
    if cond.system_prompt_contains is not None:
        checks.append((cond.system_prompt_contains, system))
    last_result = None
    if cond.tool_result_contains is not None or cond.tool_result_matches is not None:
        last_result = _last([tool_result_text(m) for m in prefix])
    if cond.tool_result_contains is not None:
        checks.append((cond.tool_result_contains, last_result))
    if cond.tool_result_matches is not None and (
        last_result is None or re.search(cond.tool_result_matches, last_result) is None
    ):
        return False
    texts = [user_text(m) for m in prefix]
    if cond.user_text_contains is not None:
        checks.append((cond.user_text_contains, _last(texts)))
    if cond.first_user_text_contains is not None:
        first = next((t for t in texts if t is not None), None)
        checks.append((cond.first_user_text_contains, first))
    return all(have is not None and want in have for want, have in checks)


def _eligible(
    turns: Sequence[Turn], start: int, system: str, prefix: Sequence[Message]
) -> int | None:
    for index in range(start, len(turns)):
        when = turns[index].when
        if when is None or condition_holds(when, system, prefix):
            return index
    return None


def produced_by(turn: Turn, message: Message) -> bool:
    """Whether an assistant message in the history is (the start of) ``turn``'s reply.

    The CLI adds assistant messages of its own — e.g. "No response requested."
    when a session that died mid-tool is resumed — and those must not move the
    script forward. Text is compared by prefix: an interrupted stream leaves a
    partial text behind.
    """
    want = next((b for b in turn.reply if isinstance(b, TextBlock | ToolUseBlock)), None)
    have = next((b for b in _blocks(message) if b.get("type") in ("text", "tool_use")), None)
    if want is None or have is None:
        return want is None and have is None
    if isinstance(want, ToolUseBlock):
        return have.get("type") == "tool_use" and have.get("name") == want.name
    text = str(have.get("text", ""))
    return have.get("type") == "text" and bool(text) and want.text.startswith(text)


def select_turn(turns: Sequence[Turn], messages: Sequence[Message], system: str) -> int | None:
    """Replay the history over ``turns``; the 0-based turn for the request, or ``None``."""
    history = [m for m in messages if m.get("role") in ("user", "assistant")]
    pointer = 0
    previous_role: object = None
    for position, message in enumerate(history):
        role = message.get("role")
        # Consecutive assistant messages are one model response split by the client.
        if role == "assistant" and previous_role != "assistant":
            chosen = _eligible(turns, pointer, system, history[:position])
            if chosen is not None and produced_by(turns[chosen], message):
                pointer = chosen if turns[chosen].repeat else chosen + 1
        previous_role = role
    return _eligible(turns, pointer, system, history)


def route(
    scenarios: Sequence[Scenario], body: Mapping[str, Any], name: str | None = None
) -> Scenario | None:
    """The scenario for a request: by URL name, else by ``match``, else the first plain one.

    Raises ``KeyError`` for an unknown ``name``.
    """
    if name is not None:
        for scenario in scenarios:
            if scenario.name == name:
                return scenario
        raise KeyError(name)
    system = system_text(body)
    messages = _messages(body)
    for scenario in scenarios:
        if scenario.match is not None and condition_holds(scenario.match, system, messages):
            return scenario
    return next((s for s in scenarios if s.match is None), None)


def _messages(body: Mapping[str, Any]) -> list[Message]:
    raw = body.get("messages")
    return [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, list) else []


def select(
    scenarios: Sequence[Scenario], body: Mapping[str, Any], name: str | None = None
) -> Selection:
    """Route the request to a scenario and conversation, then pick the turn."""
    scenario = route(scenarios, body, name)
    if scenario is None:
        return Selection(None)
    system = system_text(body)
    messages = _messages(body)
    conversation: int | None = None
    for index, conv in enumerate(scenario.conversations):
        if condition_holds(conv.when, system, messages):
            conversation = index
            break
    turns = _turns_of(scenario, conversation)
    return Selection(scenario, conversation, select_turn(turns, messages, system))


def find_cwd(body: Mapping[str, Any]) -> str | None:
    """The working directory the CLI announces in its environment block, if any."""
    texts = [system_text(body)]
    texts += [_text_of(m.get("content")) for m in _messages(body) if m.get("role") != "assistant"]
    for pattern in _CWD_PATTERNS:
        for text in texts:
            found = pattern.search(text)
            if found:
                return found.group(1).rstrip()
    return None


def resolve_paths(tool_input: Mapping[str, Any], cwd: str | None) -> dict[str, Any]:
    """Make relative ``file_path``-like inputs absolute against ``cwd``."""
    resolved = dict(tool_input)
    if cwd is None:
        return resolved
    for key in PATH_KEYS:
        value = resolved.get(key)
        if isinstance(value, str) and value and not value.startswith(("/", "~")):
            resolved[key] = posixpath.normpath(posixpath.join(cwd, value))
    return resolved
