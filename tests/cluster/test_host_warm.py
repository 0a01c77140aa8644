"""A runner host's warm pool: the next queued agent of a template adopts the
Claude Code process the host started ahead (issue 30: the warm pool holds on
runner hosts). The process was started under an id of the host's; the agent
records it, and what it leaves running is found and stopped by that id."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import open_deck
from agentdeck.runner import procs, steering
from tests.conftest import make_settings
from tests.contract.helpers import idle_after, settled
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


async def test_the_next_queued_agent_adopts_the_hosts_warm_process(
    tmp_path: Path, pg_url: str
) -> None:
    settings = make_settings(tmp_path, database_url=pg_url, runner_poll_seconds=0.2, warm_pool=1)
    deck = await open_deck(settings)
    try:
        await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=4))
        first = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
        await settled(deck, first.id, idle_after(1))
        pool = deck._runner.warm

        async def warm_pid() -> int | None:
            pids = pool.pids()
            return pids[0] if pids else None

        pid = await eventually(warm_pid, timeout=60, what="a warm process on the host")
        second = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
        assert second.state is AgentState.QUEUED
        done = await settled(deck, second.id, idle_after(1))
        carried = done.extra[procs.CARRIED]
        assert carried != second.id and Path(done.cwd).name == carried
        assert done.pid == pid  # the very process started ahead
        assert psutil.Process(pid).environ()[procs.AGENT_ENV] == carried
        assert procs.CARRIED not in (await deck.get_agent(first.id)).extra  # it started cold

        await deck.kill(second.id)
        await settled(deck, second.id, lambda a: a.state.is_final)

        async def gone() -> bool:
            return not procs.carrying(carried)

        await eventually(gone, timeout=30, what="the adopted process and its tree to end")
    finally:
        await deck.close()
        steering.set_this_host(None)
