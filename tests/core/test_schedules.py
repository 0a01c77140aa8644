"""core.schedules: the checks of what a person types, next due times from a given
clock's time, and the overlap / catch-up / budget decisions."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from agentdeck.core.schedules import (
    CatchUp,
    Decision,
    Overlap,
    RunOutcome,
    Schedule,
    ScheduleRun,
    budget_refusal,
    catch_up_decision,
    check_budget,
    check_cron,
    check_name,
    check_schedule,
    check_tz,
    day_start,
    missed,
    next_due,
    overlap_decision,
    upcoming,
)
from agentdeck.errors import UsageError

PARIS = ZoneInfo("Europe/Paris")


def at(*args: int, tz: ZoneInfo = PARIS) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


def test_next_due_every_minute() -> None:
    t0 = at(2026, 11, 28, 6, 0, 30)
    assert next_due("* * * * *", "UTC", t0) == at(2026, 11, 28, 6, 1, 0)
    assert upcoming("* * * * *", "UTC", t0, 3) == [t0 + 30, t0 + 90, t0 + 150]


def test_next_due_weekdays_at_nine_in_its_zone() -> None:
    saturday = at(2026, 11, 28, 10, 0)
    assert next_due("0 9 * * 1-5", "Europe/Paris", saturday) == at(2026, 11, 30, 9, 0)


def test_nine_stays_nine_across_dst() -> None:
    before = at(2026, 3, 28, 1, 0)  # the clocks go forward on the 29th at 2:00
    first, second = upcoming("0 9 * * *", "Europe/Paris", before, 2)
    assert datetime.fromtimestamp(first, PARIS).hour == 9
    assert datetime.fromtimestamp(second, PARIS).hour == 9
    assert second - first == 23 * 3600


def test_missed_counts_due_times_up_to_now() -> None:
    due = at(2026, 11, 28, 6, 0)
    assert missed("* * * * *", "UTC", due, due - 1) == 0
    assert missed("* * * * *", "UTC", due, due) == 1
    assert missed("* * * * *", "UTC", due, due + 600) == 11


@pytest.mark.parametrize(
    "expr", ["", "* * * *", "* * * * * *", "61 * * * *", "@reboot", "* * * * * ; rm -rf /",
             "0 9 * * 1-5\n* * * * *", "0 0 31 2 *"],
)  # fmt: skip
def test_bad_cron_is_a_usage_error(expr: str) -> None:
    with pytest.raises(UsageError, match="cron"):
        check_cron(expr)


def test_good_cron_written_one_way() -> None:
    assert check_cron("  0  9 * *   1-5 ") == "0 9 * * 1-5"


@pytest.mark.parametrize(
    "tz", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "Europe/../UTC", "", "UTC\n"]
)
def test_bad_tz_is_a_usage_error(tz: str) -> None:
    with pytest.raises(UsageError, match="time zone"):
        check_tz(tz)


def test_good_tz() -> None:
    assert check_tz("Europe/Paris") == "Europe/Paris"
    assert check_tz("UTC") == "UTC"


@pytest.mark.parametrize(
    "name", ["", "A", "../x", "a/b", "a\x00", "a\nb", "-a", "a" * 64, "a b", "é"]
)
def test_bad_names(name: str) -> None:
    with pytest.raises(UsageError, match="schedule name"):
        check_name(name)


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), True, 2e6])
def test_bad_budget(value: float) -> None:
    with pytest.raises(UsageError, match="budget"):
        check_budget(value)


def test_overlap_decisions() -> None:
    assert overlap_decision(Overlap.SKIP, None, False)[0] is Decision.START
    assert overlap_decision(Overlap.SKIP, "a1", False)[0] is Decision.SKIP
    assert overlap_decision(Overlap.QUEUE, "a1", False)[0] is Decision.QUEUE
    assert overlap_decision(Overlap.QUEUE, "a1", True)[0] is Decision.SKIP
    assert overlap_decision(Overlap.ALLOW, "a1", True)[0] is Decision.START


def test_catch_up_decisions() -> None:
    assert catch_up_decision(CatchUp.ONCE, 3) == (
        True, "3 runs missed while the daemon was down: caught up once"
    )  # fmt: skip
    run, why = catch_up_decision(CatchUp.SKIP, 1)
    assert not run and "1 run missed" in why


def test_budget_refusal() -> None:
    assert budget_refusal(None, 100.0) is None
    assert budget_refusal(1.0, 0.99) is None
    assert "daily budget of $1.00" in (budget_refusal(1.0, 1.0) or "")


def test_day_start_in_the_zone() -> None:
    now = at(2026, 11, 28, 0, 30)  # Paris: just past midnight; UTC: still the 27th
    assert day_start(now, "Europe/Paris") == at(2026, 11, 28, 0, 0)
    assert day_start(now, "UTC") == at(2026, 11, 27, 0, 0, tz=ZoneInfo("UTC"))


def _schedule(**kw: object) -> Schedule:
    base: dict[str, object] = dict(
        name="nightly", cron="0 9 * * 1-5", prompt="hi", project="/p", created_at=1.0,
        created_by="admin", next_at=2.0, template="engineer",
    )  # fmt: skip
    base.update(kw)
    return Schedule(**base)  # type: ignore[arg-type]


def test_check_schedule_needs_a_template_or_a_scenario() -> None:
    with pytest.raises(UsageError, match="template or on a scenario"):
        check_schedule(_schedule(template=None))
    assert check_schedule(_schedule(template=None, scenario="hello")).scenario == "hello"


def test_records_round_trip() -> None:
    s = _schedule(overlap=Overlap.QUEUE, catch_up=CatchUp.ONCE, budget_usd=2.5)
    assert Schedule.from_dict(s.to_dict()) == s
    r = ScheduleRun("r1", "nightly", 1.0, 2.0, RunOutcome.STARTED, "", "a1")
    assert ScheduleRun.from_dict(r.to_dict()) == r
