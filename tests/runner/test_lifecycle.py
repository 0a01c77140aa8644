"""The agent lifecycle, where it went wrong: a kill of an agent whose supervisor
is gone, a start error with a blank message, a session end that fails, a
stopped start that cannot be recorded. Each ends the agent in a legal state, or
says why it could not."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState, can_transition
from agentdeck.core.events import EventType, spawned_events
from agentdeck.core.guardrails import SharedBudget
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import AgentProcessError, StoreError
from agentdeck.runner.runner import Runner
from agentdeck.runner.steering import Steering
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


async def recorded_states(store: Store, agent_id: str) -> list[tuple[str | None, str]]:
    """Every state change the log has for the agent, in order."""
    events = await store.read(agent_id=agent_id, types=[EventType.STATE_CHANGED], limit=10_000)
    return [(e.data["old"], e.data["new"]) for e in events]


def legal(changes: list[tuple[str | None, str]]) -> bool:
    """Each change is one the lifecycle allows, from the state the one before left."""
    state: str | None = None
    for old, new in changes:
        if old is not None and (
            old != state or not can_transition(AgentState(old), AgentState(new))
        ):
            return False
        state = new
    return True


def dead_pid() -> int:
    gone = psutil.Popen(["true"])
    gone.wait()
    return gone.pid


async def stale_agent(store: Store, state: AgentState) -> Agent:
    """An agent the log says is live, whose supervising process is gone."""
    now = time.time()
    agent = Agent(
        id=f"stale{int(now * 1e6) % 10**9:09d}",
        name="stale",
        state=AgentState.STARTING,
        spec=AgentSpec(prompt="hi"),
        cwd="/nonexistent",
        created_at=now,
        updated_at=now,
        source=AgentSource.AGENTDECK,
        owner_pid=dead_pid(),
    )
    await store.record(spawned_events(agent), agent)
    if state is not AgentState.STARTING:
        moved = agent.with_changes(state=state)
        await store.record([], moved)
        agent = moved
    return agent


async def test_a_kill_of_an_agent_whose_supervisor_is_gone_ends_it_killed_legally(
    deck: tuple[Store, Runner],
) -> None:
    """It was recorded interrupted (the reconciliation), then killed: a change the
    lifecycle forbids (a final state only ever moves to ``starting``)."""
    store, runner = deck
    agent = await stale_agent(store, AgentState.STARTING)
    killed = await Steering(store, runner).kill(agent.id)
    assert killed.state is AgentState.KILLED
    assert (await store.get_agent(agent.id)).state is AgentState.KILLED
    changes = await recorded_states(store, agent.id)
    assert changes[-1] == ("starting", "killed"), changes
    assert legal(changes), changes
    orphaned = await store.read(agent_id=agent.id, types=[EventType.ERROR_OCCURRED])
    assert [e.data["kind"] for e in orphaned] == ["orphaned"]


class Failing:
    """An extension whose budget step fails with ``error`` (the start's first step)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def mcp_servers(self, agent: Agent) -> dict[str, Any]:
        return {}

    def env(self, agent: Agent) -> dict[str, str]:
        return {}

    async def budget(self, agent: Agent) -> SharedBudget | None:
        raise self.error

    async def before_send(self, agent: Agent, text: str) -> str:
        return text


@pytest.mark.parametrize("message", ["   ", "\n", ""])
async def test_a_start_error_is_never_blank(deck: tuple[Store, Runner], message: str) -> None:
    """A whitespace message raised IndexError inside the handler, which left the
    agent ``starting`` with nobody to supervise it."""
    store, runner = deck
    runner.extension = Failing(RuntimeError(message))
    with pytest.raises(AgentProcessError) as failed:
        await runner.start(AgentSpec(prompt="hi"))
    assert failed.value.message == "could not start Claude Code: RuntimeError"
    (agent,) = await store.list_agents()
    assert agent.state is AgentState.ERROR
    assert agent.last_error == "could not start Claude Code: RuntimeError"
    assert legal(await recorded_states(store, agent.id))


async def test_a_session_is_finished_even_when_its_end_fails(
    deck: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails while the session ends (here the SDK's clean-up, cancelled),
    ``finished`` is set: nobody waits on it forever."""
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="hi", scenario="chat"), keep_alive=True)
    await session.next_result(timeout=60)
    client = session._client
    assert client is not None

    async def cancelled() -> None:
        raise asyncio.CancelledError

    monkeypatch.setattr(client, "disconnect", cancelled)
    await session.kill()
    await session.wait_finished(timeout=30)
    assert (await store.get_agent(session.agent.id)).state is AgentState.KILLED
    monkeypatch.undo()
    await client.disconnect()  # the clean-up the test kept from it: its pipes closed


async def test_a_stopped_start_that_cannot_be_recorded_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A start cancelled (waiting for its turn to boot) when the store can no longer
    take its end: the failure is logged, not swallowed."""
    settings = make_settings(tmp_path)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    runner.start_slots = asyncio.Semaphore(0)  # nobody boots: it waits its turn
    try:
        session = await runner.start(AgentSpec(prompt="hi"), background=True)

        async def waiting() -> bool:
            return session._waiting_slot is not None

        await eventually(waiting, what="its start waiting for its turn")
        await store.close()
        with caplog.at_level(logging.ERROR, logger="agentdeck.runner.session"):
            for task in list(runner._launching):
                task.cancel()
            await session.wait_finished(timeout=30)
        said = [r.getMessage() for r in caplog.records if session.agent.id in r.getMessage()]
        assert said and "could not be recorded" in said[0], said
    finally:
        with contextlib.suppress(StoreError):
            await runner.shutdown()
        await store.close()
