"""What the event log keeps of an event: the text it carries, scrubbed. Pure.

Every field of an event is text from outside (a prompt, a tool's input or output,
the model's words, an error, a hook's payload) except the ones in ``STRUCTURAL``:
ids, times, names of tools and states, which agentdeck itself sets and which other
events refer to. A tool's name is the model's word too (a ``tool_use`` block may name
any tool): it is kept only as a plain tool name with no secret in it
(``tool_name``), else replaced by ``NOT_A_TOOL_NAME``. ``scrub_event`` runs
``core.redact.scrub_value`` (secrets redacted, ``<private>`` parts dropped) over the
rest, so a new event type is scrubbed whole unless a field is declared structural here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from agentdeck.core.events import Event
from agentdeck.core.redact import mark_clean, scrub, scrub_value

E = TypeVar("E", bound=Event)

STRUCTURAL = frozenset((
    "agent_id", "ts", "tool_use_id", "parent_tool_use_id", "request_id", "session_id",
    "payload_path", "memory_id", "ask_id", "to_agent_id", "parent_id", "tool", "decision",
    "old", "new", "subtype", "hook", "what", "source", "is_error", "size", "truncated",
    "terminal_reason", "expires_at",
))  # fmt: skip

NOT_A_TOOL_NAME = "[not a tool name]"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the Messages API's tool names
_PLAIN_TOOLS: set[str] = set()  # names seen plain (bounded: a model may invent many)
_PLAIN_KEPT = 4096


def tool_name(name: str) -> str:
    """``name`` if it is a plain tool name (the Messages API's characters, at most 64)
    with no secret in it, else ``NOT_A_TOOL_NAME``. Each tail after a separator is
    scrubbed too: ``mcp__x__ghp_…`` hides a token from a scrub of the whole."""
    if name in _PLAIN_TOOLS:
        return name
    if not _TOOL_NAME.fullmatch(name):
        return NOT_A_TOOL_NAME
    tails = "\n".join([name, *(name[i + 1 :] for i, c in enumerate(name[:-1]) if c in "_-")])
    if scrub(tails) != tails:
        return NOT_A_TOOL_NAME
    if len(_PLAIN_TOOLS) < _PLAIN_KEPT:
        _PLAIN_TOOLS.add(name)
    return name


# Past this much text an event is scrubbed off the event loop (see Store.record).
LARGE_TEXT = 64 * 1024
# How far past a cut the text is scrubbed: a secret that starts before the cut is
# seen with this much of it, so the cut never leaves a piece the rules miss.
CUT_MARGIN = 4096


def cut_utf8(text: str, limit: int) -> str:
    """At most ``limit`` bytes of ``text`` without splitting a character."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def scrubbed_head(text: str, limit: int) -> str:
    """The first ``limit`` UTF-8 bytes of ``text``, scrubbed before the cut."""
    return clean_cut(scrub(text[: limit + CUT_MARGIN]), limit)


def clean_cut(scrubbed: str, limit: int) -> str:
    """The first ``limit`` UTF-8 bytes of a scrubbed text, known clean: not scrubbed
    again by ``Store.record``."""
    return mark_clean(cut_utf8(scrubbed, limit))


_FIELDS: dict[type, tuple[str, ...]] = {}


def _text_fields(cls: type[Event]) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls) if f.name not in STRUCTURAL
        )
    return names


def scrub_event(event: E) -> E:
    """``event`` with its outside text scrubbed (the same object if nothing changed)."""
    changes: dict[str, Any] = {}
    tool = getattr(event, "tool", None)
    if isinstance(tool, str) and tool_name(tool) is not tool:
        changes["tool"] = NOT_A_TOOL_NAME
    for name in _text_fields(type(event)):
        value = getattr(event, name)
        if isinstance(value, str):
            text = scrub(value)
            if text is not value:  # scrub returns its argument when nothing changed
                changes[name] = text
        elif isinstance(value, Mapping | list | tuple):
            clean = scrub_value(value)
            if clean != value:
                changes[name] = clean
    return dataclasses.replace(event, **changes) if changes else event


def text_weight(event: Event, limit: int = LARGE_TEXT) -> int:
    """How many characters of text ``event`` carries, counted up to ``limit``."""
    total = 0
    for name in _text_fields(type(event)):
        total += _weight(getattr(event, name), limit - total)
        if total >= limit:
            break
    return total


def _weight(value: Any, budget: int) -> int:
    if isinstance(value, str):
        return len(value)
    items = value.values() if isinstance(value, Mapping) else value
    if not isinstance(value, Mapping | list | tuple):
        return 0
    total = 0
    for item in items:
        total += _weight(item, budget - total)
        if total >= budget:
            break
    return total
