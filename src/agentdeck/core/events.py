"""Events: the spine. Every change is one of these, appended to the log first.

Each event type is a past-tense dataclass; ``EventType`` names it on the wire and
in the database. An event is stored as its ``(type, data())`` pair (``store.rows``);
``from_record`` rebuilds the class from one, so the store never needs to know them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentdeck.core.agent import Agent
from agentdeck.core.event_types import EventType as EventType  # re-exported
from agentdeck.core.event_types import StoredEvent as StoredEvent  # re-exported


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of all events. ``ts`` is seconds since the epoch."""

    type: ClassVar[EventType]
    agent_id: str
    ts: float

    def data(self) -> dict[str, Any]:
        """The payload: every field but ``agent_id`` and ``ts``. Shallow — it is
        serialized at once, and this is the event log's hot path."""
        return {name: getattr(self, name) for name in _payload_fields(type(self))}


@dataclass(frozen=True, kw_only=True)
class AgentSpawned(Event):
    type: ClassVar[EventType] = EventType.AGENT_SPAWNED
    name: str
    cwd: str
    spec: dict[str, Any]
    source: str = "agentdeck"
    parent_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class StateChanged(Event):
    type: ClassVar[EventType] = EventType.STATE_CHANGED
    old: str | None
    new: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class UserMessageSent(Event):
    type: ClassVar[EventType] = EventType.USER_MESSAGE_SENT
    text: str


@dataclass(frozen=True, kw_only=True)
class AssistantText(Event):
    type: ClassVar[EventType] = EventType.ASSISTANT_TEXT
    text: str
    parent_tool_use_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCalled(Event):
    type: ClassVar[EventType] = EventType.TOOL_CALLED
    tool_use_id: str
    tool: str
    input: dict[str, Any]
    parent_tool_use_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolReturned(Event):
    """A tool's result. ``output`` may be cut to ``size`` bytes; then
    ``truncated`` is true and ``payload_path`` holds the whole output."""

    type: ClassVar[EventType] = EventType.TOOL_RETURNED
    tool_use_id: str
    output: str
    is_error: bool = False
    size: int = 0
    truncated: bool = False
    payload_path: str | None = None
    parent_tool_use_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class PermissionRequested(Event):
    type: ClassVar[EventType] = EventType.PERMISSION_REQUESTED
    request_id: str
    tool: str
    input: dict[str, Any]
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class PermissionResolved(Event):
    type: ClassVar[EventType] = EventType.PERMISSION_RESOLVED
    request_id: str
    decision: str
    reason: str | None = None
    rule: str | None = None
    by: str | None = None


@dataclass(frozen=True, kw_only=True)
class CostUpdated(Event):
    """After each turn. ``cost_usd`` is the Claude Code process's running total
    (it restarts with each new process); ``delta_usd`` is what this turn cost, so
    summing deltas gives the spend over any period."""

    type: ClassVar[EventType] = EventType.COST_UPDATED
    cost_usd: float
    input_tokens: int
    output_tokens: int
    delta_usd: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TurnCompleted(Event):
    """One ``result`` from the CLI. Judge it by ``is_error`` and ``terminal_reason``."""

    type: ClassVar[EventType] = EventType.TURN_COMPLETED
    subtype: str
    is_error: bool
    terminal_reason: str | None
    result: str | None
    session_id: str
    num_turns: int
    duration_ms: int
    cost_usd: float | None
    input_tokens: int = 0
    output_tokens: int = 0
    api_error_status: int | None = None
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ErrorOccurred(Event):
    type: ClassVar[EventType] = EventType.ERROR_OCCURRED
    message: str
    kind: str = "error"
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class Notice(Event):
    type: ClassVar[EventType] = EventType.NOTICE
    kind: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class HookReceived(Event):
    """A Claude Code hook of a hand-started session that no other event tells
    (PreCompact, SubagentStop, Notification, …)."""

    type: ClassVar[EventType] = EventType.HOOK_RECEIVED
    hook: str  # the hook event name, e.g. ``PreCompact``
    session_id: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ObservationRecorded(Event):
    """Memory kept something: an observation (``ob…``) or a session summary (``su…``)."""

    type: ClassVar[EventType] = EventType.OBSERVATION_RECORDED
    memory_id: str
    kind: str  # ``observation`` or ``summary``
    title: str


@dataclass(frozen=True, kw_only=True)
class SandboxBlocked(Event):
    """The sandbox stopped something: a connection (``target`` is ``host:port``)
    or a write (``target`` is the path)."""

    type: ClassVar[EventType] = EventType.SANDBOX_BLOCKED
    what: str  # "network" or "write"
    target: str
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class QuestionAsked(Event):
    """The agent asked its orchestrator (``to_agent_id``) or a person (None) and
    waits for the answer until ``expires_at``."""

    type: ClassVar[EventType] = EventType.QUESTION_ASKED
    ask_id: str
    question: str
    to_agent_id: str | None
    expires_at: float


@dataclass(frozen=True, kw_only=True)
class QuestionAnswered(Event):
    """The agent's question was answered (``by``: ``agent:<id>``, ``user:<channel>``)
    or expired (``by`` is ``timeout``, ``answer`` None)."""

    type: ClassVar[EventType] = EventType.QUESTION_ANSWERED
    ask_id: str
    answer: str | None
    by: str


@dataclass(frozen=True, kw_only=True)
class BudgetWarning(Event):
    """A daily budget (``scope`` fleet, user or project; ``name`` the user or
    project) reached 80 % today (``day``, UTC) as this agent spent: recorded once
    per budget per day. The notifications map it to a message."""

    type: ClassVar[EventType] = EventType.BUDGET_WARNING
    scope: str
    name: str
    daily_usd: float
    spent_usd: float
    day: str
    message: str


_FIELDS: dict[type[Event], tuple[str, ...]] = {}


def _payload_fields(cls: type[Event]) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("agent_id", "ts"))
        _FIELDS[cls] = names
    return names


EVENT_CLASSES: dict[EventType, type[Event]] = {
    cls.type: cls
    for cls in (
        AgentSpawned,
        StateChanged,
        UserMessageSent,
        AssistantText,
        ToolCalled,
        ToolReturned,
        PermissionRequested,
        PermissionResolved,
        CostUpdated,
        TurnCompleted,
        ErrorOccurred,
        Notice,
        HookReceived,
        ObservationRecorded,
        SandboxBlocked,
        QuestionAsked,
        QuestionAnswered,
        BudgetWarning,
    )
}


def from_record(stored: StoredEvent) -> Event:
    """Rebuild the typed event; unknown types raise ``KeyError``."""
    cls = EVENT_CLASSES[EventType(stored.type)]
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in stored.data.items() if k in names}
    return cls(agent_id=stored.agent_id, ts=stored.ts, **kwargs)


def spawned_events(agent: Agent, reason: str | None = None) -> list[Event]:
    """What the log says when an agent comes into being."""
    now = agent.created_at
    return [
        AgentSpawned(
            agent_id=agent.id,
            ts=now,
            name=agent.name,
            cwd=agent.cwd,
            spec=agent.spec.to_dict(),
            source=str(agent.source),
            parent_id=agent.parent_id,
        ),
        StateChanged(agent_id=agent.id, ts=now, old=None, new=agent.state, reason=reason),
    ]
