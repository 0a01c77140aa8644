"""A runner host's stop settles what the store still has as live under it, and an
agent whose lease it lost meanwhile is not its to settle: the write is refused
(``Fenced``), said, and the stop goes on to the other agents and to its end."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.hosts import Host
from agentdeck.daemon.compose import build_runner
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore
from tests.conftest import make_settings
from tests.store.conftest import db_rows, make_agent

pytestmark = pytest.mark.anyio


async def test_an_agent_fenced_away_is_left_to_its_holder_and_the_rest_is_settled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    try:
        hosts = HostStore(store)
        await hosts.register(Host("h1", capacity=10))
        # Two agents this process supervised, both still starting in the store (a
        # creation that did not end in time): "lost" is leased, and its lease lapses.
        for agent_id in ("lost", "kept"):
            await store.save_agent(
                make_agent(agent_id, state=AgentState.STARTING, owner_pid=os.getpid())
            )
        (lease,) = await hosts.claim("h1", ["lost"])
        store.fence_as("h1")
        store.fence("lost", lease.token)
        db_rows(store, "UPDATE leases SET expires_at = expires_at - 100 WHERE agent_id = 'lost'")

        runner = build_runner(store, settings)
        with caplog.at_level(logging.WARNING):
            await runner.shutdown()  # before: Fenced escaped it, and "kept" stayed starting

        assert (await store.get_agent("kept")).state is AgentState.INTERRUPTED
        lost = await store.get_agent("lost")
        assert (
            lost.state is AgentState.STARTING
        )  # its holder (or the reaper) says what became of it
        assert [e.type for e in await store.read(agent_id="lost")] == []
        said = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
        assert any("runner host h1" in m and "lease" in m for m in said), said
    finally:
        await store.close()
