"""Guardrails: table-driven limits, properties of the streaks, the daily cap."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.events import (
    AssistantText,
    CostUpdated,
    Event,
    ToolCalled,
    ToolReturned,
    TurnCompleted,
)
from agentdeck.core.guardrails import FleetBudget, Guard, Limits, Stop, StopKind, day_start

T0 = 1_700_000_000.0
A = "a1"


def cost(usd: float | None, ts: float = T0) -> CostUpdated:
    return CostUpdated(agent_id=A, ts=ts, cost_usd=usd or 0.0, input_tokens=1, output_tokens=1)


def turn(usd: float | None = None, turns: int = 1, ts: float = T0) -> TurnCompleted:
    return TurnCompleted(
        agent_id=A,
        ts=ts,
        subtype="success",
        is_error=False,
        terminal_reason="completed",
        result="ok",
        session_id="s",
        num_turns=turns,
        duration_ms=1,
        cost_usd=usd,
    )


def called(tool: str = "Bash", ts: float = T0, **tool_input: Any) -> ToolCalled:
    return ToolCalled(agent_id=A, ts=ts, tool_use_id="t", tool=tool, input=tool_input)


def returned(is_error: bool, ts: float = T0) -> ToolReturned:
    return ToolReturned(agent_id=A, ts=ts, tool_use_id="t", output="x", is_error=is_error)


def text(ts: float = T0) -> AssistantText:
    return AssistantText(agent_id=A, ts=ts, text="hi")


def run(guard: Guard, events: list[Event]) -> list[tuple[int, Stop]]:
    return [(i, s) for i, e in enumerate(events) if (s := guard.observe(e)) is not None]


CASES: list[tuple[str, Limits, dict[str, Any], list[Event], int, StopKind, str]] = [
    (
        "budget from cumulative process cost",
        Limits(max_usd=0.25),
        {},
        [cost(0.10), turn(0.10), cost(0.20), cost(0.31)],
        3,
        StopKind.BUDGET,
        "budget exceeded: spent $0.31 of $0.25",
    ),
    (
        "budget counts the cost before this process",
        Limits(max_usd=1.0),
        {"base_cost": 0.9},
        [cost(0.05), cost(0.15)],
        1,
        StopKind.BUDGET,
        "budget exceeded: spent $1.05 of $1.00",
    ),
    (
        "a missing turn cost adds nothing",
        Limits(max_usd=0.5),
        {},
        [cost(0.4), turn(None), cost(None), cost(0.45), cost(0.6)],
        4,
        StopKind.BUDGET,
        "spent $0.60 of $0.50",
    ),
    (
        "turns reach the limit",
        Limits(max_turns=5),
        {"base_turns": 2},
        [turn(turns=1), turn(turns=1), text(), turn(turns=1)],
        3,
        StopKind.TURNS,
        "turn limit reached: 5 of 5 turns",
    ),
    (
        "tool errors in a row",
        Limits(max_consecutive_tool_errors=3),
        {},
        [
            returned(True),
            returned(True),
            returned(False),
            returned(True),
            text(),
            returned(True),
            returned(True),
        ],
        6,
        StopKind.TOOL_ERRORS,
        "3 tool errors in a row (limit 3)",
    ),
    (
        "the same call repeated",
        Limits(max_repeated_calls=3),
        {},
        [
            called(command="ls"),
            called(command="ls"),
            called(command="pwd"),
            called(command="pwd"),
            returned(False),
            called(command="pwd"),
        ],
        5,
        StopKind.REPEATED_CALLS,
        "the same Bash call 3 times in a row (limit 3)",
    ),
    (
        "key order does not make a call different",
        Limits(max_repeated_calls=2),
        {},
        [
            ToolCalled(agent_id=A, ts=T0, tool_use_id="1", tool="Read", input={"a": 1, "b": 2}),
            ToolCalled(agent_id=A, ts=T0, tool_use_id="2", tool="Read", input={"b": 2, "a": 1}),
        ],
        1,
        StopKind.REPEATED_CALLS,
        "same Read call 2 times",
    ),
    (
        "wall time from event timestamps",
        Limits(max_wall_seconds=60),
        {},
        [text(T0 + 30), text(T0 + 60), text(T0 + 61)],
        2,
        StopKind.WALL_TIME,
        "wall time exceeded: ran 61.0s of 60s",
    ),
]


@pytest.mark.parametrize(
    "limits, kwargs, events, at, kind, message",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_limits(
    limits: Limits,
    kwargs: dict[str, Any],
    events: list[Event],
    at: int,
    kind: StopKind,
    message: str,
) -> None:
    guard = Guard(limits, started_at=T0, **kwargs)
    stops = run(guard, [*events, *events])  # going on past the limit reports nothing new
    assert len(stops) == 1
    index, stop = stops[0]
    assert (index, stop.kind) == (at, kind)
    assert message in stop.message
    assert guard.stopped == stop


def test_no_limits_never_stop() -> None:
    guard = Guard(Limits(), started_at=T0)
    events: list[Event] = [cost(99.0), turn(99.0, turns=1000), returned(True)] * 50
    assert run(guard, events) == []
    assert guard.check_clock(T0 + 1e9) is None


def test_check_clock_reports_once() -> None:
    guard = Guard(Limits(max_wall_seconds=10), started_at=T0)
    assert guard.check_clock(T0 + 10) is None
    stop = guard.check_clock(T0 + 12.5)
    assert stop is not None and stop.kind is StopKind.WALL_TIME
    assert stop.message == "wall time exceeded: ran 12.5s of 10s"
    assert (stop.limit, stop.value) == (10.0, 12.5)
    assert guard.check_clock(T0 + 20) is None
    assert guard.observe(text(T0 + 30)) is None


def test_spent_is_base_plus_process_cost() -> None:
    guard = Guard(Limits(), started_at=T0, base_cost=1.5)
    guard.observe(cost(0.25))
    guard.observe(turn(0.2))  # a lower cumulative figure (out of order) never lowers it
    assert guard.spent == 1.75


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"max_usd": -1}, "max_usd must be a finite number >= 0"),
        ({"max_turns": 0}, "max_turns must be a finite number >= 1"),
        ({"max_repeated_calls": True}, "must be a number"),
        ({"daily_usd": "5"}, "must be a number"),
        ({"max_wall_seconds": float("inf")}, "finite"),
        ({"max_dollars": 5}, "unknown limits ['max_dollars']"),
    ],
)
def test_bad_limits_are_refused(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError) as info:
        Limits.from_mapping(data)
    assert problem in str(info.value)


def test_limits_from_mapping() -> None:
    limits = Limits.from_mapping({"max_usd": 2, "max_turns": 10, "daily_usd": None})
    assert limits == Limits(max_usd=2, max_turns=10)


# --- properties ---------------------------------------------------------------

tool_events = st.lists(
    st.one_of(
        st.booleans().map(returned),
        st.sampled_from(["ls", "pwd"]).map(lambda c: called(command=c)),
        st.just(text()),
    ),
    max_size=60,
)


@given(tool_events)
def test_error_streak_is_the_trailing_run_of_errors(events: list[Event]) -> None:
    guard = Guard(Limits(), started_at=T0)
    for e in events:
        guard.observe(e)
    results = [e.is_error for e in events if isinstance(e, ToolReturned)]
    trailing = len(results) - len("".join("e" if r else "o" for r in results).rstrip("e"))
    assert guard.error_streak == trailing


@given(tool_events, st.integers(min_value=1, max_value=5), st.integers(min_value=1, max_value=5))
def test_a_stop_is_reported_exactly_once_iff_a_limit_is_reached(
    events: list[Event], max_errors: int, max_repeats: int
) -> None:
    limits = Limits(max_consecutive_tool_errors=max_errors, max_repeated_calls=max_repeats)
    guard = Guard(limits, started_at=T0)
    stops = run(guard, events)
    # Recompute the longest runs independently.
    longest_errors = longest_repeats = err = rep = 0
    last: str | None = None
    for e in events:
        if isinstance(e, ToolReturned):
            err = err + 1 if e.is_error else 0
            longest_errors = max(longest_errors, err)
        elif isinstance(e, ToolCalled):
            key = e.input["command"]
            rep = rep + 1 if key == last else 1
            last = key
            longest_repeats = max(longest_repeats, rep)
    reached = longest_errors >= max_errors or longest_repeats >= max_repeats
    assert len(stops) == (1 if reached else 0)


@given(st.lists(st.floats(min_value=0, max_value=10), max_size=30), st.floats(0, 5))
def test_spent_is_base_plus_the_highest_cumulative_cost(costs: list[float], base: float) -> None:
    guard = Guard(Limits(), started_at=T0, base_cost=base)
    for c in costs:
        guard.observe(cost(c))
    assert guard.spent == base + max([0.0, *costs])


# --- the daily cap --------------------------------------------------------------


def utc(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_fleet_budget_stops_every_spend_over_the_cap_until_the_utc_day_ends() -> None:
    fleet = FleetBudget(10, spent_today=9.0, now=utc(2026, 3, 1, 22))
    assert fleet.add(0.5, utc(2026, 3, 1, 22, 30)) is None
    stop = fleet.add(0.75, utc(2026, 3, 1, 23))
    assert stop is not None and stop.kind is StopKind.DAILY_BUDGET
    assert stop.message == "daily budget exceeded: spent $10.25 of $10.00 today (2026-03-01 UTC)"
    assert fleet.add(0.01, utc(2026, 3, 1, 23, 59)) is not None  # every time, not once
    assert fleet.check(utc(2026, 3, 1, 23, 59, 59)) is not None
    assert fleet.check(utc(2026, 3, 2, 0, 0, 0)) is None  # a new UTC day
    assert fleet.spent == 0.0
    assert fleet.add(3.0, utc(2026, 3, 1, 23)) is None  # a late event never resets again


def test_day_start_is_utc_midnight() -> None:
    assert day_start(utc(2026, 3, 1, 23, 59, 59)) == utc(2026, 3, 1)
    assert day_start(utc(2026, 3, 2)) == utc(2026, 3, 2)


def test_a_guard_feeds_its_cost_increases_to_the_fleet() -> None:
    now = utc(2026, 3, 1, 12)
    fleet = FleetBudget(1.0, spent_today=0.5, now=now)
    one = Guard(Limits(), started_at=now, fleet=fleet)
    two = Guard(Limits(), started_at=now, fleet=fleet)
    assert one.observe(cost(0.2, now)) is None
    assert one.observe(turn(0.2, ts=now)) is None  # the same cumulative figure again
    assert two.observe(cost(0.3, now)) is None
    assert fleet.spent == pytest.approx(1.0)
    stop = two.observe(cost(0.35, now))
    assert stop is not None and stop.kind is StopKind.DAILY_BUDGET
    assert two.observe(cost(0.5, now)) is None  # this guard already said stop
    again = one.observe(cost(0.25, now))
    assert again is not None and again.kind is StopKind.DAILY_BUDGET
