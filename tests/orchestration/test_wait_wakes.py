"""A wait for children sees every change that woke it, however the writes and the
sessions' tasks interleave on the loop.

A session takes its agent's new state once the store has it: the task that
committed resumes a step after the writer told its loop, while the wake goes to
the waiting orchestrator from the writer's subscriber. Two children's writes in
two batches, told to a busy loop at once, let the waiter run between the first
child's session and the second's: it read the second as running, its wake
already spent, and waited for the rest of its hour (CI: the lead never settled).
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import StoredEvent
from agentdeck.core.lifecycle import transition
from agentdeck.settings import Settings
from agentdeck.store.rows import agent_to_row, event_to_row
from tests.orchestration.conftest import Team, make_team
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


@dataclass
class Held:
    """What the orchestrator reads of a live session: its agent as committed."""

    agent: Agent
    finished: asyncio.Event = field(default_factory=asyncio.Event)


def agent(name: str, state: AgentState, parent: Agent | None = None) -> Agent:
    now = time.time()
    return Agent(
        id=f"a{name}{int(now * 1000)}",
        name=name,
        state=state,
        spec=AgentSpec(prompt=name),
        cwd="/",
        created_at=now,
        updated_at=now,
        parent_id=parent.id if parent else None,
    )


def commit_now(team: Team, held: Held, new: AgentState) -> asyncio.Task[None]:
    """Write a state change the way a session does (``_commit``): queued now, and
    the session's agent set once the write is settled, in the task that waits."""
    moved = transition(held.agent, new, ts=time.time())
    rows = [event_to_row(e) for e in moved.events]
    written = team.store._writer.queue(rows, [agent_to_row(moved.agent)])

    async def settled() -> None:
        await written
        held.agent = moved.agent

    return asyncio.create_task(settled())


async def test_two_childrens_ends_told_at_once_wake_the_wait(
    settings: Settings, tmp_path: Path
) -> None:
    async with make_team(settings, tmp_path) as team:
        lead = agent("lead", AgentState.AWAITING_AGENTS)
        a = Held(agent("wa", AgentState.RUNNING, lead))
        b = Held(agent("wb", AgentState.RUNNING, lead))
        for one in (lead, a.agent, b.agent):
            await team.store.save_agent(one)
        team.runner.sessions.update({a.agent.id: a, b.agent.id: b})
        try:
            await _wait_through_two_ends(team, lead, a, b)
        finally:
            for held in (a, b):
                del team.runner.sessions[held.agent.id]


async def _wait_through_two_ends(team: Team, lead: Agent, a: Held, b: Held) -> None:
    waiting = asyncio.create_task(team.orch.waits.wait(lead.id, ["wa", "wb"], timeout=600))
    await eventually(lambda: _waits(team, lead.id), what="the lead to wait")

    batches: queue.Queue[Sequence[StoredEvent]] = queue.Queue()

    def committed(events: Sequence[StoredEvent]) -> None:  # the writer's thread
        batches.put(events)

    unsubscribe = team.store.subscribe(committed)  # called after the orchestrator's
    try:
        # The loop held (busy) while each write commits alone, its caller's
        # result and its wake queued behind the other's.
        ended_a = commit_now(team, a, AgentState.IDLE)
        batches.get(timeout=30)
        ended_b = commit_now(team, b, AgentState.ERROR)
        batches.get(timeout=30)
    finally:
        unsubscribe()
    await asyncio.gather(ended_a, ended_b)
    try:
        async with asyncio.timeout(30):  # before the fix: all of its 600 s
            said = await waiting
    finally:
        waiting.cancel()
    assert said.startswith("wait_for_agents: done after"), said
    assert "Finished their turn (2)" in said and "Still running" not in said, said


async def _waits(team: Team, lead_id: str) -> bool:
    return lead_id in team.orch._wake
