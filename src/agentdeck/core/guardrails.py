"""Guardrails: stop an agent when it crosses a limit. Pure: no I/O, no clock.

One ``Guard`` per Claude Code process. Feed it the agent's events as they are
recorded (``observe``) and the time now and then (``check_clock``); it returns
a ``Stop`` the first time a limit is crossed, and ``None`` ever after (the
caller acts once). Limits:

- ``max_usd``: cost ``base_cost + process cost`` EXCEEDS it. ``CostUpdated`` and
  ``TurnCompleted`` carry the PROCESS's cumulative cost, so the guard keeps the
  highest seen and adds the agent's cost before this process (``base_cost``).
- ``max_wall_seconds``: ``now - started_at`` exceeds it (event timestamps count
  as "now" too, so a busy agent is caught without a clock tick).
- ``max_turns``: ``base_turns`` + the ``num_turns`` of every ``TurnCompleted``
  REACHES it (the runner counts ``Agent.turns`` the same way).
- ``max_consecutive_tool_errors``: that many ``ToolReturned.is_error`` in a
  row (a successful result resets the streak).
- ``max_repeated_calls``: that many consecutive ``ToolCalled`` with the same
  tool and the same input (canonical JSON).

Money and time stop when they EXCEED the limit; counts when they REACH it.
``daily_usd`` is the fleet-wide cap, enforced by ``FleetBudget``: a ``Guard``
given one feeds it each cost increase. So is a ``tree`` budget (``core.tree``):
the cost of an orchestrator's children rolls up to it and its ancestors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any, Protocol

from agentdeck.core.audit import canonical_json
from agentdeck.core.events import CostUpdated, Event, ToolCalled, ToolReturned, TurnCompleted

Number = float | int

_COUNTS = ("max_turns", "max_consecutive_tool_errors", "max_repeated_calls")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What a guard enforces; ``None`` means no limit. Amounts are ≥ 0, counts ≥ 1."""

    max_usd: Number | None = None
    max_turns: Number | None = None
    max_wall_seconds: Number | None = None
    daily_usd: Number | None = None
    max_consecutive_tool_errors: Number | None = None
    max_repeated_calls: Number | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{f.name} must be a number, not {value!r}")
            least = 1 if f.name in _COUNTS else 0
            if not math.isfinite(value) or value < least:
                raise ValueError(f"{f.name} must be a finite number >= {least}, not {value!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Limits:
        """From settings or a profile; unknown keys and bad values → ``ValueError``."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown limits {unknown}; known: {sorted(known)}")
        return cls(**data)


class StopKind(StrEnum):
    BUDGET = "budget"
    TURNS = "turns"
    WALL_TIME = "wall_time"
    TOOL_ERRORS = "tool_errors"
    REPEATED_CALLS = "repeated_calls"
    DAILY_BUDGET = "daily_budget"
    TREE_BUDGET = "tree_budget"
    USER_BUDGET = "user_budget"
    PROJECT_BUDGET = "project_budget"


@dataclass(frozen=True)
class Stop:
    """Why to stop: which limit, its value and what was reached, in words."""

    kind: StopKind
    message: str
    limit: float
    value: float


class SharedBudget(Protocol):
    """A budget several agents spend from: told each cost increase of one of them."""

    def charge(self, delta_usd: float) -> Stop | None: ...


def _usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


def _num(value: float) -> str:
    return f"{value:g}"


WARN_FRACTION = 0.8  # a daily budget warns once a day when this much of it is spent


class FleetBudget:
    """The daily USD cap over every agent. Days are UTC calendar dates: spend
    resets at 00:00 UTC whatever the local time zone.

    Seed it with today's spend so far (``Store.spend_since(day_start(now))``).
    Unlike a ``Guard`` it reports EVERY crossing call: it is shared, and each
    agent that keeps spending past the cap must be stopped.

    ``scope`` / ``name``: the same cap over the agents of one user or one project
    (``scope`` "user" or "project"); the fleet's is ``("fleet", "")``.
    ``warning_due`` says, once per UTC day, that ``WARN_FRACTION`` of it is spent.
    """

    def __init__(
        self,
        daily_usd: Number,
        *,
        spent_today: float = 0.0,
        now: float,
        scope: str = "fleet",
        name: str = "",
        warned_today: bool = False,
    ) -> None:
        Limits(daily_usd=daily_usd)  # validates
        self.daily_usd = float(daily_usd)
        self.spent = float(spent_today)
        self.day = utc_day(now)
        self.scope = scope
        self.name = name
        self.warned_day: date | None = self.day if warned_today else None

    @property
    def label(self) -> str:
        """Whose budget, in words: ``daily budget`` or ``user alice's daily budget``."""
        return (
            "daily budget" if self.scope == "fleet" else f"{self.scope} {self.name}'s daily budget"
        )

    def warning_due(self, now: float) -> bool:
        """True the first time in a UTC day that spend reaches ``WARN_FRACTION``."""
        self._roll(now)
        if self.warned_day == self.day or self.spent < WARN_FRACTION * self.daily_usd:
            return False
        self.warned_day = self.day
        return True

    def add(self, delta_usd: float, now: float) -> Stop | None:
        """Count ``delta_usd`` spent at ``now``; a ``Stop`` when over the cap."""
        self._roll(now)
        self.spent += max(0.0, delta_usd)
        return self.check(now)

    def check(self, now: float) -> Stop | None:
        """A ``Stop`` when today's spend is over the cap (e.g. before starting an agent)."""
        self._roll(now)
        if self.spent > self.daily_usd:
            kind = {"user": StopKind.USER_BUDGET, "project": StopKind.PROJECT_BUDGET}
            return Stop(
                kind.get(self.scope, StopKind.DAILY_BUDGET),
                f"{self.label} exceeded: spent {_usd(self.spent)} of {_usd(self.daily_usd)} "
                f"today ({self.day.isoformat()} UTC)",
                self.daily_usd,
                self.spent,
            )
        return None

    def _roll(self, now: float) -> None:
        today = utc_day(now)
        if today > self.day:  # a clock going backwards never resets the spend
            self.day = today
            self.spent = 0.0


def utc_day(ts: float) -> date:
    return datetime.fromtimestamp(ts, UTC).date()


def day_start(ts: float) -> float:
    """The epoch seconds of 00:00 UTC on ``ts``'s UTC date."""
    d = utc_day(ts)
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()


class Guard:
    def __init__(
        self,
        limits: Limits,
        *,
        started_at: float,
        base_cost: float = 0.0,
        base_turns: int = 0,
        fleet: FleetBudget | None = None,
        tree: SharedBudget | None = None,
        budgets: tuple[FleetBudget, ...] = (),
    ) -> None:
        """``base_cost`` / ``base_turns``: the agent's totals before this process
        (``Agent.cost_usd`` / ``Agent.turns`` when resuming); ``started_at``:
        when the wall clock started (the caller decides: first start or resume);
        ``tree``: the agent's place in its tree's budget, if any; ``budgets``: the
        daily budgets of its user and project, charged like the fleet's."""
        self.limits = limits
        self.started_at = started_at
        self.base_cost = base_cost
        self.base_turns = base_turns
        self.fleet = fleet
        self.tree = tree
        self.budgets = budgets
        self.process_cost = 0.0
        self.turns = base_turns
        self.error_streak = 0
        self.repeat_streak = 0
        self._last_call: tuple[str, str] | None = None
        self.stopped: Stop | None = None

    @property
    def spent(self) -> float:
        """The agent's total cost: before this process plus in it."""
        return self.base_cost + self.process_cost

    def observe(self, event: Event) -> Stop | None:
        if isinstance(event, CostUpdated | TurnCompleted):
            if isinstance(event, TurnCompleted):
                self.turns += event.num_turns
            fleet_stop = self._cost(event.cost_usd, event.ts)
        else:
            fleet_stop = None
        if isinstance(event, ToolReturned):
            self.error_streak = self.error_streak + 1 if event.is_error else 0
        elif isinstance(event, ToolCalled):
            call = (event.tool, _call_key(event.input))
            self.repeat_streak = self.repeat_streak + 1 if call == self._last_call else 1
            self._last_call = call
        return self._report(self._crossed(event.ts) or fleet_stop)

    def check_clock(self, now: float) -> Stop | None:
        return self._report(self._wall(now))

    def _cost(self, cost: float | None, ts: float) -> Stop | None:
        if cost is None or cost <= self.process_cost:
            return None  # cumulative: an equal, lower or missing figure adds nothing
        delta = cost - self.process_cost
        self.process_cost = cost
        daily = [self.fleet, *self.budgets] if self.fleet is not None else [*self.budgets]
        stops = [b.add(delta, ts) for b in daily]  # every one counts the spend
        tree_stop = self.tree.charge(delta) if self.tree is not None else None
        return next((s for s in stops if s is not None), None) or tree_stop

    def _report(self, stop: Stop | None) -> Stop | None:
        if stop is None or self.stopped is not None:
            return None
        self.stopped = stop
        return stop

    def _crossed(self, now: float) -> Stop | None:
        lim = self.limits
        if lim.max_usd is not None and self.spent > lim.max_usd:
            return Stop(
                StopKind.BUDGET,
                f"budget exceeded: spent {_usd(self.spent)} of {_usd(lim.max_usd)}",
                float(lim.max_usd),
                self.spent,
            )
        if lim.max_turns is not None and self.turns >= lim.max_turns:
            return Stop(
                StopKind.TURNS,
                f"turn limit reached: {self.turns} of {_num(lim.max_turns)} turns",
                float(lim.max_turns),
                self.turns,
            )
        n = lim.max_consecutive_tool_errors
        if n is not None and self.error_streak >= n:
            return Stop(
                StopKind.TOOL_ERRORS,
                f"{self.error_streak} tool errors in a row (limit {_num(n)})",
                float(n),
                self.error_streak,
            )
        n = lim.max_repeated_calls
        if n is not None and self.repeat_streak >= n and self._last_call is not None:
            return Stop(
                StopKind.REPEATED_CALLS,
                f"the same {self._last_call[0]} call {self.repeat_streak} times in a row "
                f"(limit {_num(n)})",
                float(n),
                self.repeat_streak,
            )
        return self._wall(now)

    def _wall(self, now: float) -> Stop | None:
        limit = self.limits.max_wall_seconds
        elapsed = now - self.started_at
        if limit is not None and elapsed > limit:
            return Stop(
                StopKind.WALL_TIME,
                f"wall time exceeded: ran {elapsed:.1f}s of {_num(limit)}s",
                float(limit),
                elapsed,
            )
        return None


def _call_key(tool_input: Mapping[str, Any]) -> str:
    try:
        return canonical_json(tool_input)
    except (TypeError, ValueError):  # not JSON data: still compare deterministically
        return repr(sorted(tool_input.items(), key=lambda kv: str(kv[0])))
