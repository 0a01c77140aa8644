"""The deck's figures for ``/metrics`` and the metrics pushed over OTLP (both
read them here, so they show the same): pure, no telemetry library.

Since the daemon started (``Tally``, fed by the follower of the event log):
events ingested by type, tool calls, turns, approvals resolved and their wait,
asks and their wait, merge outcomes. What the store already sums (agents by
state, tokens, cost) and what is pending is read from it when asked instead
(``read_gauges``), so it survives a restart.

Label values a model could choose (a tool's name) are bounded: past
``MAX_LABELS`` distinct ones, the rest count as ``other``; a name that is not a
plain tool name (``tool_label``: the API's characters, 64 at most, no secret
from any of its ``_``/``-`` separators on) counts as ``other`` too, so no text
the model wrote reaches a collector.
"""

from __future__ import annotations

import bisect
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.event_scrub import tool_name
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.merge_queue import PENDING as MERGES_PENDING
from agentdeck.core.merge_queue import MergeEntry, MergeState

MAX_LABELS = 200
MOST_PENDING = 1000  # pending requests read at once (the most one read returns)
MAX_PENDING = 10_000  # requests and asks whose start is remembered until answered
WAIT_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)


@dataclass
class Histogram:
    bounds: tuple[float, ...] = WAIT_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * (len(WAIT_BUCKETS) + 1))
    total: float = 0.0
    count: int = 0
    # Told each observation (the OTLP push's histogram: a histogram cannot be observed).
    listeners: list[Callable[[float], None]] = field(default_factory=list)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1
        for listener in self.listeners:
            listener(value)

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' buckets: (upper bound, observations at or below it)."""
        out, running = [], 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


def tool_label(name: str) -> str:
    """``name`` as a metric label if it is a plain tool name with no secret in it
    (``core.event_scrub.tool_name``), else ``other``."""
    return name if tool_name(name) == name else "other"


def _bounded(counts: dict[str, int], label: str) -> str:
    return label if label in counts or len(counts) < MAX_LABELS else "other"


class _Starts(OrderedDict[str, float]):
    """When each pending request began; the oldest forgotten past ``MAX_PENDING``."""

    def add(self, key: str, ts: float) -> None:
        self[key] = ts
        while len(self) > MAX_PENDING:
            self.popitem(last=False)


@dataclass
class Tally:
    events: dict[str, int] = field(default_factory=dict)
    tool_calls: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)  # ok | error
    approvals: dict[str, int] = field(default_factory=dict)  # by decision
    approval_wait: Histogram = field(default_factory=Histogram)
    asks: int = 0
    answers: dict[str, int] = field(default_factory=dict)  # agent | user | timeout
    ask_wait: Histogram = field(default_factory=Histogram)
    merges: dict[str, int] = field(default_factory=dict)  # by final state
    last_event_id: int = 0
    _requested: _Starts = field(default_factory=_Starts)
    _asked: _Starts = field(default_factory=_Starts)

    def feed(self, event: StoredEvent) -> None:
        kind, data = event.type, event.data
        self.last_event_id = max(self.last_event_id, event.id)
        label = _bounded(self.events, kind)
        self.events[label] = self.events.get(label, 0) + 1
        if kind == EventType.TOOL_CALLED:
            tool = str(data.get("tool") or "")
            if tool not in self.tool_calls:  # a label seen is a name already checked
                tool = _bounded(self.tool_calls, tool_label(tool))
            self.tool_calls[tool] = self.tool_calls.get(tool, 0) + 1
        elif kind == EventType.TURN_COMPLETED:
            outcome = "error" if data.get("is_error") else "ok"
            self.turns[outcome] = self.turns.get(outcome, 0) + 1
        elif kind == EventType.PERMISSION_REQUESTED:
            self._requested.add(str(data.get("request_id")), event.ts)
        elif kind == EventType.PERMISSION_RESOLVED:
            decision = _bounded(self.approvals, str(data.get("decision") or ""))
            self.approvals[decision] = self.approvals.get(decision, 0) + 1
            start = self._requested.pop(str(data.get("request_id")), None)
            if start is not None:
                self.approval_wait.observe(max(0.0, event.ts - start))
        elif kind == EventType.QUESTION_ASKED:
            self.asks += 1
            self._asked.add(str(data.get("ask_id")), event.ts)
        elif kind == EventType.QUESTION_ANSWERED:
            by = str(data.get("by") or "")
            who = "timeout" if by == "timeout" else by.split(":", 1)[0] or "other"
            who = who if who in ("agent", "user", "timeout") else "other"
            self.answers[who] = self.answers.get(who, 0) + 1
            start = self._asked.pop(str(data.get("ask_id")), None)
            if start is not None:
                self.ask_wait.observe(max(0.0, event.ts - start))
        elif kind == EventType.NOTICE and data.get("kind") == "merge":
            detail = data.get("detail") or {}
            state = str(detail.get("state") or "other")
            state = state if state in ("landed", "refused", "failed", "cancelled") else "other"
            self.merges[state] = self.merges.get(state, 0) + 1


class StoreSums(Protocol):
    """What the store sums over every agent (the daemon's ``Deck.stats()``)."""

    @property
    def agents_by_state(self) -> Mapping[str, int]: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def last_event_id(self) -> int: ...


class GaugeSource(Protocol):
    """The parts of the daemon's Deck the gauges are read from."""

    async def stats(self) -> StoreSums: ...

    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = ...,
        agent_id: str | None = ...,
        limit: int = ...,
    ) -> list[Approval]: ...

    async def asks(
        self, *, states: list[AskState] | None = ..., agent_id: str | None = ..., limit: int = ...
    ) -> list[Ask]: ...

    async def merges(
        self, *, states: list[MergeState] | None = ..., agent_id: str | None = ..., limit: int = ...
    ) -> list[MergeEntry]: ...


@dataclass(frozen=True)
class Gauges:
    """The store's figures at one moment."""

    sums: StoreSums
    approvals: int
    approval_oldest: float  # seconds the oldest pending approval has waited
    asks: int
    ask_oldest: float
    merges: dict[str, int]  # queued or merging, by state


async def read_gauges(deck: GaugeSource) -> Gauges:
    sums = await deck.stats()
    approvals = await deck.approvals(states=[ApprovalState.PENDING], limit=MOST_PENDING)
    asks = await deck.asks(states=[AskState.PENDING], limit=MOST_PENDING)
    merges = await deck.merges(states=list(MERGES_PENDING), limit=MOST_PENDING)
    now = time.time()
    return Gauges(
        sums=sums,
        approvals=len(approvals),
        approval_oldest=max((now - a.created_at for a in approvals), default=0.0),
        asks=len(asks),
        ask_oldest=max((now - a.created_at for a in asks), default=0.0),
        merges={str(s): sum(1 for m in merges if m.state == s) for s in MERGES_PENDING},
    )
