"""The daemon's scheduler over the daemon's own Deck, on a clock the test moves
(``tests.schedules.clock``; no sleeps): a schedule firing every minute starts a
scripted agent each minute; overlap skip / queue / allow while the previous run's
agent still runs; the schedule's daily budget refuses a run past it; catch-up skip
and once across a restart of the deck; bad cron / tz / template refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.schedules import RunOutcome, ScheduleRun
from agentdeck.core.usage import BudgetScope
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.errors import UsageError
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.contract.helpers import unique
from tests.schedules.clock import ManualClock
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio
T0 = datetime(2026, 11, 30, 9, 0, 30, tzinfo=UTC).timestamp()  # 30 s past a minute
SETTLE = 60.0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sched")


@pytest.fixture(scope="module")
def settings(home: Path) -> Settings:
    return make_settings(home)


@pytest.fixture(scope="module")
async def deck(settings: Settings) -> AsyncIterator[Deck]:
    d = await open_deck(settings)
    try:
        yield d
    finally:
        await d.close()


@pytest.fixture
def clock(deck: Deck) -> ManualClock:
    c = ManualClock(T0)
    deck._schedule_runner(c)
    return c


async def add(deck: Deck, home: Path, scenario: str = "chat", **kw: object) -> str:
    name = unique("s")
    await deck.add_schedule(
        name, kw.pop("cron", "* * * * *"), prompt="hello", scenario=scenario,  # type: ignore[arg-type]
        project=str(home), **kw,  # type: ignore[arg-type]
    )  # fmt: skip
    return name


async def done(deck: Deck, agent_id: str | None) -> None:
    assert agent_id is not None

    async def probe() -> bool:
        return not (await deck.get_agent(agent_id)).state.is_live

    await eventually(probe, timeout=SETTLE, what=f"agent {agent_id} to end")


async def runs(deck: Deck, name: str) -> list[ScheduleRun]:
    return list(reversed((await deck.schedule(name)).runs))  # oldest first


async def test_a_schedule_fires_every_minute_on_the_clock(
    deck: Deck, clock: ManualClock, home: Path
) -> None:
    name = await add(deck, home)
    view = await deck.schedule(name)
    assert view.schedule.next_at == T0 + 30
    assert list(view.upcoming[:2]) == [T0 + 30, T0 + 90]
    scheduler = deck.start_scheduling(clock)
    try:
        clock.advance(29)  # not yet due
        before = scheduler.ticks
        await eventually(lambda: _ticked(scheduler, before), what="a tick")
        assert await runs(deck, name) == []
        for minute in (1, 2):
            clock.advance(60 if minute > 1 else 1)

            async def fired(n: int = minute) -> list[ScheduleRun] | None:
                found = await runs(deck, name)
                return found if len(found) == n and found[-1].agent_id else None

            found = await eventually(fired, timeout=SETTLE, what=f"run {minute}")
            run = found[-1]
            assert run.outcome is RunOutcome.STARTED and run.due_at == T0 + 30 + 60 * (minute - 1)
            agent = await deck.get_agent(run.agent_id or "")
            assert agent.spec.owner == "admin" and agent.spec.prompt == "hello"
            await done(deck, run.agent_id)
            assert (await deck.get_agent(run.agent_id or "")).state is AgentState.DONE
    finally:
        await scheduler.stop()


async def _ticked(scheduler: object, before: int) -> bool:
    return int(getattr(scheduler, "ticks", 0)) > before


async def _due(deck: Deck, clock: ManualClock) -> list[ScheduleRun]:
    clock.advance(60)
    return await deck._schedule_runner().tick()


async def test_overlap_skip_queue_and_allow(deck: Deck, clock: ManualClock, home: Path) -> None:
    skip = await add(deck, home, "slow-stream", overlap="skip")
    queue = await add(deck, home, "slow-stream", overlap="queue")
    allow = await add(deck, home, "slow-stream", overlap="allow")
    first = {r.schedule: r for r in await _due(deck, clock)}
    assert {first[n].outcome for n in (skip, queue, allow)} == {RunOutcome.STARTED}
    second = {r.schedule: r for r in await _due(deck, clock)}
    assert second[skip].outcome is RunOutcome.SKIPPED
    assert first[skip].agent_id in second[skip].reason
    assert second[queue].outcome is RunOutcome.QUEUED and second[queue].agent_id is None
    assert second[allow].outcome is RunOutcome.STARTED
    assert second[allow].agent_id != first[allow].agent_id
    third = {r.schedule: r for r in await _due(deck, clock)}
    assert third[queue].outcome is RunOutcome.SKIPPED  # one waits at most
    assert "already waits" in third[queue].reason
    for run in (*first.values(), second[allow], third[allow]):
        await deck.kill(run.agent_id or "")
        await done(deck, run.agent_id)
    started = [r for r in await deck._schedule_runner().tick() if r.schedule == queue]
    assert [r.id for r in started] == [second[queue].id]
    assert started[0].outcome is RunOutcome.STARTED and started[0].agent_id
    await deck.kill(started[0].agent_id or "")
    history = await runs(deck, queue)
    assert [r.outcome for r in history] == [
        RunOutcome.STARTED, RunOutcome.STARTED, RunOutcome.SKIPPED
    ]  # fmt: skip


async def test_the_daily_budget_refuses_a_run_past_it(
    deck: Deck, clock: ManualClock, home: Path
) -> None:
    name = await add(deck, home, budget_usd=0.000001)
    first = await deck.run_schedule(name)
    assert first.outcome is RunOutcome.STARTED
    await done(deck, first.agent_id)
    assert (await deck.get_agent(first.agent_id or "")).cost_usd > 0
    refused = await deck.run_schedule(name)
    assert refused.outcome is RunOutcome.REFUSED and refused.agent_id is None
    assert "daily budget of $0.00" in refused.reason
    assert [r.outcome for r in await runs(deck, name)] == [RunOutcome.STARTED, RunOutcome.REFUSED]


async def test_the_projects_budget_applies_as_for_any_agent(tmp_path: Path) -> None:
    own = await open_deck(make_settings(tmp_path))
    try:
        await own.set_budget(BudgetScope.PROJECT, str(tmp_path), 0.000001)
        await own.add_schedule(
            "nightly", "0 0 1 1 *", prompt="hello", scenario="chat", project=str(tmp_path)
        )
        first = await own.run_schedule("nightly")  # spends past it: stopped once it does
        assert first.outcome is RunOutcome.STARTED
        await done(own, first.agent_id)
        refused = await own.run_schedule("nightly")
        assert refused.outcome is RunOutcome.REFUSED and refused.agent_id is None
        assert "PolicyDenied" in refused.reason and "daily budget exceeded" in refused.reason
    finally:
        await own.close()


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("cron", "61 * * * *", "cron"),
        ("cron", "every day", "cron"),
        ("tz", "Mars/Base", "time zone"),
        ("tz", "../../etc/passwd", "time zone"),
        ("template", "no-such-template", "unknown agent template"),
        ("scenario", "no-such-scenario", "unknown scenario"),
        ("overlap", "sometimes", "overlap"),
        ("catch_up", "always", "catch-up"),
    ],
)
async def test_bad_input_is_a_clear_usage_error(
    deck: Deck, home: Path, field: str, value: str, match: str
) -> None:
    kw: dict[str, object] = {"cron": "0 9 * * 1-5", "scenario": "chat", field: value}
    name = unique("bad")
    with pytest.raises(UsageError, match=match):
        await deck.add_schedule(
            name,
            str(kw.pop("cron")),
            prompt="p",
            project=str(home),
            **kw,  # type: ignore[arg-type]
        )
    assert name not in [s.name for s in await deck.schedules()]


async def test_pause_resume_and_remove(deck: Deck, clock: ManualClock, home: Path) -> None:
    name = await add(deck, home)
    await deck.pause_schedule(name)
    assert not [r for r in await _due(deck, clock) if r.schedule == name]
    clock.advance(600)
    resumed = await deck.resume_schedule(name)
    assert not resumed.paused and resumed.next_at > clock.now()  # nothing missed is run
    await deck.remove_schedule(name)
    assert name not in [s.name for s in await deck.schedules()]


@pytest.mark.parametrize("catch_up", ["skip", "once"])
async def test_catch_up_across_a_restart(tmp_path: Path, catch_up: str) -> None:
    settings = make_settings(tmp_path)
    first = await open_deck(settings)
    try:
        first._schedule_runner(ManualClock(T0))
        await first.add_schedule(
            "nightly", "* * * * *", prompt="hi", scenario="chat", project=str(tmp_path),
            catch_up=catch_up,
        )  # fmt: skip
    finally:
        await first.close()
    later = ManualClock(T0 + 30 + 600)  # down for ten minutes past the first due time
    second = await open_deck(settings)
    try:
        scheduler = second._schedule_runner(later)
        caught = await scheduler.catch_up()
        assert len(caught) == 1
        run = caught[0]
        assert "11 runs missed while the daemon was down" in run.reason
        if catch_up == "skip":
            assert run.outcome is RunOutcome.MISSED and run.agent_id is None
        else:
            assert run.outcome is RunOutcome.STARTED and run.agent_id
            await done(second, run.agent_id)
        assert (await second.schedule("nightly")).schedule.next_at == T0 + 30 + 660
        assert await scheduler.catch_up() == []  # once only
        assert await scheduler.tick() == []  # nothing else due until the next minute
    finally:
        await second.close()
