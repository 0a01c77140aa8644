"""Memory: what sessions did, kept so the next session starts knowing it.

Pure data and logic, no I/O. The hooks bridge and the runner turn tool calls
into :class:`Observation` records and finished sessions into
:class:`SessionSummary` records; ``memory/`` stores and searches them; the
context builder picks what the next session in the same project is told.
Everything here has already been scrubbed (``core.redact``) before it is built.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from enum import StrEnum


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
