"""A runner host that comes back after losing an agent's lease, unbeknown to it,
finds out and says so (the cluster e2e test's SIGSTOP, its interleavings made
deterministic in one process).

The host's heartbeat answer is held back once it has committed, as if the host
had been stopped (SIGSTOP) between the commit and reading it; meanwhile its lease
expires and another host ("h2", through the store as ``agentdeck runner`` does)
claims the agent. Two things can then happen on the host:

- the answer, now stale, says everything is held: it is not trusted (the host
  asks again, and fences the agent before it keeps any transcript of it);
- the agent's Claude Code process ends before any heartbeat says the lease is
  lost: its release finds another holder, so the host is fenced all the same,
  says so, and its late writes for the agent stay refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from agentdeck.cli.context import opened_store
from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import Notice
from agentdeck.core.hosts import Host
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.errors import Fenced
from agentdeck.runner import procs, steering, transcripts
from agentdeck.runner.hosting import RunnerHost
from agentdeck.runner.reaping import Reaper
from agentdeck.store.hosts import HostStore
from agentdeck.store.transcripts import TranscriptStore
from tests.conftest import make_settings
from tests.support.cluster import SLOW_TURN
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

FENCED = "runner host h1 fenced from agent"


class HeldAnswer:
    """The host's heartbeat, whose answer is held back once armed: the commit
    lands, the host reads what it says only when ``release`` is set."""

    def __init__(self, hosts: HostStore) -> None:
        self.real = hosts.heartbeat
        self.armed = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(
        self, name: str, holding: Mapping[str, int] | None = None, *, epoch: int | None = None
    ) -> list[str]:
        answer = await self.real(name, holding, epoch=epoch)
        if self.armed and not self.release.is_set():
            self.holding.set()
            await self.release.wait()
        return answer


@dataclass
class Taken:
    """Host h1 ran the agent (in its long tool call); its answer is held, and h2
    holds the agent's lease now."""

    deck: Deck
    h1: RunnerHost
    held: HeldAnswer
    agent: Agent  # as h1 started it: its process, session and cwd


@dataclass
class OnH1:
    """Host h1 runs the agent, in its long tool call; its heartbeat answers are
    ``held`` once a test holds them (released at the end)."""

    deck: Deck
    h1: RunnerHost
    agent: Agent  # as h1 started it: its process, session and cwd
    held: HeldAnswer | None = None

    def hold(self, monkeypatch: pytest.MonkeyPatch) -> HeldAnswer:
        """h1's heartbeat answers held back from now on: no lease renewed."""
        self.held = HeldAnswer(self.h1.hosts)
        monkeypatch.setattr(self.h1.hosts, "heartbeat", self.held)
        self.held.armed = True
        return self.held


@contextlib.asynccontextmanager
async def on_h1(tmp_path: Path, pg_url: str, *, resume: bool) -> AsyncIterator[OnH1]:
    settings = make_settings(
        tmp_path,
        database_url=pg_url,
        runner_poll_seconds=0.2,
        runner_heartbeat_seconds=0.5,
        runner_lease_seconds=2.0,
    )
    scenario = tmp_path / "slow-turn.yaml"
    scenario.write_text(yaml.safe_dump(SLOW_TURN))
    deck = await open_deck(settings)
    running: OnH1 | None = None
    try:
        spec = AgentSpec(
            prompt="run the job",
            scenario=str(scenario),
            allow=("Bash(python3:*)",),
            resume_on_restart=resume,
        )
        agent_id = (await deck.create_agent(spec)).id
        h1 = await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=1))

        async def in_its_tool() -> Agent | None:
            agent = await deck.get_agent(agent_id)
            busy = agent.current_tool == "Bash" and agent.session_id and agent.pid
            return agent if busy else None

        agent = await eventually(in_its_tool, timeout=90, what="the agent in its long tool")
        running = OnH1(deck, h1, agent)
        yield running
    finally:
        if running is not None and running.held is not None:
            running.held.release.set()
        await deck.close()
        steering.set_this_host(None)


@pytest.fixture
async def taken(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Taken]:
    async with on_h1(tmp_path, pg_url, resume=True) as running:
        h1, agent_id = running.h1, running.agent.id
        held = running.hold(monkeypatch)
        reap = h1.reaper.reap

        async def stopped_reaper() -> list[Agent]:  # h1 is stopped: its reaper too
            await held.release.wait()
            return await reap()

        monkeypatch.setattr(h1.reaper, "reap", stopped_reaper)
        async with asyncio.timeout(10):
            await held.holding.wait()
        # Another host, with a store of its own, takes the agent once h1's lease
        # (last renewed by the held heartbeat) has expired, as its reaper and
        # claims would; its own lease outlasts the test.
        async with opened_store(make_settings(tmp_path / "h2", database_url=pg_url)) as other:
            h2 = HostStore(other, heartbeat_seconds=1.0, lease_seconds=600.0)
            await h2.register(Host(name="h2", capacity=1))

            async def claimed() -> bool:
                return bool(await h2.claim("h2", [agent_id]))

            await eventually(claimed, timeout=30, what="host h2 to take the agent")
            lost = await Reaper(other, h2).lost(
                await other.get_agent(agent_id), "runner host h1 lost"
            )
            assert lost.state is AgentState.QUEUED
        yield Taken(running.deck, h1, held, running.agent)


async def late_write(taken: Taken) -> None:
    agent = taken.agent
    note = Notice(agent_id=agent.id, ts=time.time(), kind="late", message="a late write")
    await taken.h1.store.record([note], agent.with_changes(updated_at=time.time()))


async def test_a_stale_heartbeat_answer_is_not_trusted_the_host_asks_again(
    taken: Taken, caplog: pytest.LogCaptureFixture
) -> None:
    agent, h1 = taken.agent, taken.h1
    # What h2 keeps of the agent, and h1's transcript written to meanwhile (its
    # tool ended while it was stopped): h1 must not keep its copy over h2's.
    kept = TranscriptStore(h1.store)
    assert agent.session_id is not None
    await kept.save(agent.id, agent.session_id, "h2", "h2's transcript")
    path = transcripts.path_of(h1.runner.settings, agent)
    assert path is not None and path.exists()
    later = path.stat().st_mtime + 60
    os.utime(path, (later, later))
    taken.held.release.set()  # h1 reads the answer: "all held", a whole lease late

    async def said() -> bool:
        return FENCED in caplog.text

    async def asked_again() -> bool:
        return "a heartbeat answered after a whole lease: asking again" in caplog.text

    await eventually(said, timeout=30, what="host h1 to say it is fenced")
    await eventually(asked_again, timeout=30, what="host h1 to distrust the late answer")

    async def stopped() -> bool:
        return not procs.is_running(agent.pid)

    await eventually(stopped, timeout=30, what="h1's Claude Code process to stop")
    assert agent.id in h1.fenced and agent.id not in h1.leases
    assert await kept.load(agent.id) == (agent.session_id, "h2's transcript")
    with pytest.raises(Fenced):
        await late_write(taken)


async def test_a_process_ended_before_a_heartbeat_said_its_lease_lost_is_fenced_and_said(
    taken: Taken, caplog: pytest.LogCaptureFixture
) -> None:
    agent, h1 = taken.agent, taken.h1
    assert agent.pid is not None
    await asyncio.to_thread(procs.terminate_tree, agent.pid, 1.0)

    async def said() -> bool:  # once its release was refused (after the session ended)
        return f"{FENCED} {agent.id}: its lease was lost" in caplog.text

    await eventually(said, timeout=30, what="host h1 to say it is fenced")
    # No heartbeat answered since the lease was lost (the held one is on its way).
    assert not taken.held.release.is_set()
    assert "before its process ended" in caplog.text
    assert h1.runner.live(agent.id) is None
    assert agent.id in h1.fenced and agent.id not in h1.leases
    with pytest.raises(Fenced):  # its late writes stay refused: h2 writes for it now
        await late_write(taken)
    taken.held.release.set()  # the stale answer changes nothing of that

    async def answered() -> bool:
        return "asking again" in caplog.text

    await eventually(answered, timeout=30, what="h1 to ask again")
    with pytest.raises(Fenced):
        await late_write(taken)


async def test_a_host_whose_own_reaper_finds_its_lease_expired_ends_the_agent(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """h1's own reaper can be the first to find h1's lease expired (its heartbeat
    answer held: h1 was stopped, say). The agent's end is then written by h1's
    store, which refused it (the lease it fenced the agent's writes with is the
    one reaped): the reap failed, and the agent was left running with no lease,
    where no reaper looks again. Now h1 fences itself from the agent first (its
    process stopped), and the end lands."""
    async with on_h1(tmp_path, pg_url, resume=False) as running:
        deck, h1, agent = running.deck, running.h1, running.agent
        agent_id = agent.id
        running.hold(monkeypatch)  # no renewal from now on: h1's own reaper finds it expired

        async def ended() -> Agent | None:
            found = await deck.get_agent(agent_id)
            return found if not found.state.is_live else None

        gone = await eventually(ended, timeout=60, what="the agent ended by h1's reaper")
        assert gone.state is AgentState.INTERRUPTED, gone
        assert gone.last_error == "runner host h1 lost"
        assert "reaping lost leases failed" not in caplog.text
        assert f"{FENCED} {agent_id}" in caplog.text
        assert agent.pid is not None

        async def stopped() -> bool:
            return not procs.is_running(agent.pid)

        await eventually(stopped, timeout=30, what="h1's Claude Code process to stop")
        assert agent_id in h1.fenced and agent_id not in h1.leases
