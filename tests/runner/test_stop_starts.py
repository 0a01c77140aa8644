"""Agents created in the same instant as a stop: refused (``ShuttingDown``) or
stopped at their next step, never left ``starting`` and never with a process;
starts wait their turn to boot and a stop ends the wait; kill and interrupt of an
agent still starting take effect at once."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import psutil
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import spawned_events
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import ShuttingDown
from agentdeck.runner.runner import Runner
from agentdeck.runner.session import STOPPED_STARTING
from agentdeck.store import Store
from tests.conftest import make_settings
from tests.daemon.test_stop_while_starting import silent_claude
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


def silent_processes() -> list[psutil.Process]:
    """The silent Claude Codes this test process started (they never answer)."""
    return [
        p for p in psutil.Process().children(recursive=True)
        if p.name() == "sleep" and "120" in p.cmdline()
    ]  # fmt: skip


async def booting(count: int) -> list[psutil.Process]:
    async def up() -> list[psutil.Process]:
        return found if len(found := silent_processes()) >= count else []

    return await eventually(up, what=f"{count} Claude Code processes booting")


async def test_creations_racing_the_shutdown_leave_nothing_half_alive(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, claude_cli_path=silent_claude(tmp_path), max_concurrent_starts=2
    )
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:

        async def create(i: int) -> object:
            spec = AgentSpec(prompt=f"hello {i}", scenario="chat")
            try:
                return await runner.start(spec)
            except ShuttingDown as exc:
                return exc

        early = [asyncio.create_task(create(i)) for i in range(5)]
        started = await booting(2)  # two boot, three wait their turn
        assert len(silent_processes()) == 2
        # One scripted model for the scenario, however many agents start on it.
        assert list(runner.scripted_models()) == ["chat"]
        # More creations in the same instant as the shutdown.
        late = [asyncio.create_task(create(i)) for i in range(5, 8)]
        await runner.shutdown(suspend=True)
        outcomes = await asyncio.gather(*early, *late)
        assert all(isinstance(o, ShuttingDown) for o in outcomes), outcomes
        assert "stopping" in str(outcomes[0])
        with pytest.raises(ShuttingDown):
            await runner.start(AgentSpec(prompt="one more"))
        assert psutil.wait_procs(started, timeout=5)[1] == []
        assert silent_processes() == []
        agents = await store.list_agents()
        # Those refused before they existed were never recorded; every other one
        # stopped where it was, interrupted, and none is left live.
        assert 2 <= len(agents) <= 8
        assert {a.state for a in agents} == {AgentState.INTERRUPTED}, agents
        assert all(a.pid is None for a in agents)
    finally:
        await store.close()


async def test_a_start_waiting_its_turn_is_stopped_without_a_process(
    tmp_path: Path, deck: tuple[Store, Runner]
) -> None:
    store, runner = deck
    runner.settings.claude_cli_path = silent_claude(tmp_path)
    runner.start_slots = asyncio.Semaphore(1)
    first = await runner.start(AgentSpec(prompt="first"), background=True)
    (booted,) = await booting(1)
    second = await runner.start(AgentSpec(prompt="second"), background=True)
    assert second.starting
    await second.kill()  # waiting for its turn: no process ever
    await first.interrupt()  # booting: its process goes
    assert psutil.wait_procs([booted], timeout=5)[1] == []
    killed = await store.get_agent(second.agent.id)
    interrupted = await store.get_agent(first.agent.id)
    assert (killed.state, killed.last_error) == (AgentState.KILLED, STOPPED_STARTING)
    assert (interrupted.state, interrupted.last_error) == (
        AgentState.INTERRUPTED, STOPPED_STARTING
    )  # fmt: skip
    assert killed.pid is None and interrupted.pid is None
    assert silent_processes() == []


async def test_a_creation_slower_than_the_shutdown_is_not_left_starting(
    deck: tuple[Store, Runner],
) -> None:
    """A creation that outlasts the shutdown's wait for it (its preparation held up,
    as on a loaded host: the demo's Ctrl-C once left such an agent ``starting`` with
    nobody to supervise it) is marked when the runner stops: interrupted, to be
    carried on by the next daemon."""
    store, runner = deck
    recorded = asyncio.Event()
    held = asyncio.Event()  # never set: the preparation does not end by itself

    async def slow_prepare(agent: Agent, **kwargs: object) -> object:
        await store.record(spawned_events(agent), agent)  # as _prepare records a new one
        recorded.set()
        await held.wait()
        raise AssertionError("unreachable")

    runner._prepare = slow_prepare  # type: ignore[method-assign]
    creation = asyncio.create_task(runner.start(AgentSpec(prompt="late"), background=True))
    await asyncio.wait_for(recorded.wait(), 30)
    (agent,) = await store.list_agents()
    assert agent.state == AgentState.STARTING
    await runner.shutdown(suspend=True)
    after = await store.get_agent(agent.id)
    assert after.state == AgentState.INTERRUPTED
    assert after.pid is None and after.extra.get("resume_at_start") is True
    assert after.last_error and "carries on" in after.last_error
    creation.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await creation
