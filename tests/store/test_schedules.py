"""Schedules in the database (``store.schedules``), on both backends: kept, listed,
paused and removed with their history; the prompt scrubbed before it is stored; a
due time claimed once (a second claim of the same next_at loses); queued runs settled
once; the agents of a day's runs found for the schedule's budget."""

from __future__ import annotations

import pytest

from agentdeck.core.schedules import RunOutcome, Schedule, ScheduleRun
from agentdeck.errors import NotFound, Refused
from agentdeck.store import Store
from agentdeck.store.schedules import ScheduleStore, new_run_id

pytestmark = pytest.mark.anyio

SECRET = "sk-ant-api03-" + "x" * 90


def schedule(name: str, *, next_at: float = 100.0, prompt: str = "check the build") -> Schedule:
    return Schedule(
        name=name, cron="* * * * *", prompt=prompt, project="/srv/p", created_at=1.0,
        created_by="alice", next_at=next_at, template="reviewer",
    )  # fmt: skip


def run(name: str, outcome: RunOutcome, at: float, agent: str | None = None) -> ScheduleRun:
    return ScheduleRun(new_run_id(), name, at, at, outcome, "", agent)


async def test_kept_listed_paused_and_removed_with_history(store: Store) -> None:
    ss = ScheduleStore(store)
    await ss.add(schedule("b"))
    await ss.add(schedule("a", next_at=50.0))
    with pytest.raises(Refused, match="exists"):
        await ss.add(schedule("a"))
    assert [s.name for s in await ss.all()] == ["a", "b"]
    assert await ss.soonest() == 50.0
    assert [s.name for s in await ss.due(60.0)] == ["a"]
    paused = await ss.set_paused("a", True)
    assert paused.paused and await ss.due(60.0) == []
    assert await ss.soonest() == 100.0
    resumed = await ss.set_paused("a", False, next_at=160.0)
    assert not resumed.paused and resumed.next_at == 160.0
    await ss.record(run("a", RunOutcome.STARTED, 10.0, "a1"))
    await ss.remove("a")
    with pytest.raises(NotFound):
        await ss.get("a")
    assert await ss.runs("a") == []
    with pytest.raises(NotFound):
        await ss.remove("a")


async def test_the_prompt_is_scrubbed_before_it_is_stored(store: Store) -> None:
    kept = await ScheduleStore(store).add(schedule("s", prompt=f"deploy with {SECRET}"))
    assert SECRET not in kept.prompt
    assert SECRET not in (await ScheduleStore(store).get("s")).prompt


async def test_a_due_time_is_claimed_once(store: Store) -> None:
    ss = ScheduleStore(store)
    s = await ss.add(schedule("s", next_at=100.0))
    assert await ss.claim(s, 160.0, run("s", RunOutcome.STARTED, 100.0, "a1"))
    assert not await ss.claim(s, 160.0, run("s", RunOutcome.STARTED, 100.0, "a2"))
    assert (await ss.get("s")).next_at == 160.0
    assert [r.agent_id for r in await ss.runs("s")] == ["a1"]


async def test_queued_runs_settle_once_and_agents_of_the_day(store: Store) -> None:
    ss = ScheduleStore(store)
    await ss.add(schedule("s"))
    await ss.record(run("s", RunOutcome.STARTED, 10.0, "a1"))
    await ss.record(run("s", RunOutcome.STARTED, 20.0, "a2"))
    waiting = await ss.record(run("s", RunOutcome.QUEUED, 30.0))
    assert [r.id for r in await ss.queued()] == [waiting.id]
    assert await ss.last_agent("s") == "a2"
    assert await ss.settle(
        waiting.id, RunOutcome.STARTED, at=40.0, agent_id="a3", expected=RunOutcome.QUEUED
    )
    assert not await ss.settle(
        waiting.id, RunOutcome.STARTED, at=41.0, agent_id="a4", expected=RunOutcome.QUEUED
    )
    assert await ss.queued() == []
    assert await ss.agents_since("s", 15.0) == ["a3", "a2"]
    assert [r.outcome for r in await ss.runs("s", limit=2)] == [RunOutcome.STARTED] * 2
