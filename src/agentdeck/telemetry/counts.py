"""Counts kept from the event log for ``/metrics``: pure, no telemetry library.

Since the daemon started: events ingested by type, tool calls, turns, approvals
resolved and their wait, asks and their wait, merge outcomes. What the store
already sums (agents by state, tokens, cost) is read from it at each scrape
instead (``web.metrics``), so it survives a restart.

Label values a model could choose (a tool's name) are bounded: past
``MAX_LABELS`` distinct ones, the rest count as ``other``.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field

from agentdeck.core.event_types import EventType, StoredEvent

MAX_LABELS = 200
MAX_PENDING = 10_000  # requests and asks whose start is remembered until answered
WAIT_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)


@dataclass
class Histogram:
    bounds: tuple[float, ...] = WAIT_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * (len(WAIT_BUCKETS) + 1))
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' buckets: (upper bound, observations at or below it)."""
        out, running = [], 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


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
            tool = _bounded(self.tool_calls, str(data.get("tool") or ""))
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
