"""The pure parts of usage and budgets: periods, budgets as given, the scoped
daily budgets and their once-a-day 80 % warning, the guard charging them."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import CostUpdated
from agentdeck.core.guardrails import FleetBudget, Guard, Limits, StopKind, day_start
from agentdeck.core.usage import (
    Bucket,
    UsageFigures,
    UsageGroup,
    UsagePoint,
    UsageReport,
    bucket_start,
    check_budget,
    owner_of,
    parse_since,
    project_of,
)
from agentdeck.errors import UsageError

DAY = 86_400.0
NOON = 20_000 * DAY + 12 * 3600  # a UTC noon


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30m", 1800), ("24h", 86_400), ("7d", 604_800), ("2w", 1_209_600), (" 1.5h ", 5400)],
)
def test_periods_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "7x", "d", "-1d", "0d", "367d", "1e3d"])
def test_a_period_that_cannot_be_read_is_a_usage_error_saying_how(text: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_since(text)
    assert text.strip() in err.value.message


def test_buckets_start_on_the_hour_and_the_utc_day() -> None:
    assert bucket_start(NOON + 125, Bucket.HOUR) == NOON
    assert bucket_start(NOON + 125, Bucket.DAY) == day_start(NOON)


@pytest.mark.parametrize(
    ("scope", "name", "usd", "problem"),
    [("team", "a", 1, "unknown budget scope"), ("user", " ", 1, "needs the user's name"),
     ("user", "a", -1, ">= 0"), ("project", "/p", float("nan"), ">= 0")],
)  # fmt: skip
def test_a_bad_budget_is_refused_naming_what_is_wrong(
    scope: str, name: str, usd: float, problem: str
) -> None:
    with pytest.raises(UsageError, match=problem):
        check_budget(scope, name, usd)


def test_an_agent_counts_for_its_owner_else_admin_and_for_its_project_else_its_dir() -> None:
    spec = AgentSpec(prompt="x", cwd="/asked")
    agent = Agent("a1", "n", AgentState.DONE, spec, cwd="/got", created_at=0, updated_at=0)
    assert owner_of(agent) == "admin" and project_of(agent) == "/asked"
    agent = agent.with_changes(spec=AgentSpec(prompt="x", owner="alice", project="/p"))
    assert owner_of(agent) == "alice" and project_of(agent) == "/p"


def test_a_user_budget_stops_with_its_name_and_warns_once_a_day_at_80_percent() -> None:
    budget = FleetBudget(1.0, now=NOON, scope="user", name="alice")
    assert budget.add(0.5, NOON) is None and not budget.warning_due(NOON)
    assert budget.add(0.3, NOON) is None
    assert budget.warning_due(NOON) and not budget.warning_due(NOON + 1)  # once
    stop = budget.add(0.3, NOON + 2)
    assert stop is not None and stop.kind == StopKind.USER_BUDGET
    assert stop.message.startswith("user alice's daily budget exceeded: spent $1.10 of $1.00")
    # A new UTC day: spend and warning start afresh.
    assert budget.check(NOON + DAY) is None and budget.add(0.85, NOON + DAY) is None
    assert budget.warning_due(NOON + DAY)
    # Warned already today (another process, before a restart): not again.
    again = FleetBudget(
        1.0, spent_today=0.9, now=NOON, scope="project", name="/p", warned_today=True
    )
    assert not again.warning_due(NOON)
    assert again.add(0.2, NOON).kind == StopKind.PROJECT_BUDGET  # type: ignore[union-attr]


def test_the_guard_charges_the_fleet_and_every_budget_and_reports_the_first_crossed() -> None:
    fleet = FleetBudget(10.0, now=NOON)
    user = FleetBudget(1.0, now=NOON, scope="user", name="bob")
    project = FleetBudget(5.0, now=NOON, scope="project", name="/p")
    guard = Guard(Limits(), started_at=NOON, fleet=fleet, budgets=(user, project))
    event = CostUpdated(agent_id="a", ts=NOON, cost_usd=1.5, input_tokens=1, output_tokens=1)
    stop = guard.observe(event)
    assert stop is not None and stop.kind == StopKind.USER_BUDGET
    assert fleet.spent == user.spent == project.spent == 1.5


def test_a_report_sums_its_points_and_orders_groups_by_cost() -> None:
    points = [
        UsagePoint(0.0, "b", UsageFigures(1.0, 10, 1, 1)),
        UsagePoint(0.0, "a", UsageFigures(2.0, 20, 2, 1)),
        UsagePoint(3600.0, "b", UsageFigures(1.5, 5, 5, 2)),
    ]
    report = UsageReport(0.0, 7200.0, Bucket.HOUR, UsageGroup.USER, points, 9.0)
    assert report.total == UsageFigures(4.5, 35, 8, 4)
    assert [k for k, _ in report.groups()] == ["b", "a"]
    assert UsageReport.from_dict(report.to_dict()) == report
