"""The hub wakes on NOTIFY (``daemon.hub``, ``store.listen``): two Stores on one
PostgreSQL database, as two API nodes, a hub on each polling only every 30 s;
events written through node B reach a subscriber of node A's hub without the poll,
each once and in id order, its own writes and the other's interleaved."""

from __future__ import annotations

import asyncio
import time

import pytest

from agentdeck.core.events import AssistantText, StoredEvent
from agentdeck.daemon.hub import EventHub
from agentdeck.store import Store

pytestmark = pytest.mark.anyio

POLL_SECONDS = 30.0  # never reached in these tests: a NOTIFY must wake the hub
DEADLINE = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _text(agent_id: str, n: int) -> AssistantText:
    return AssistantText(agent_id=agent_id, ts=time.time(), text=f"msg {n}")


async def _collect(hub: EventHub, n: int) -> list[StoredEvent]:
    sub = hub.subscribe()
    got: list[StoredEvent] = []
    try:
        async with asyncio.timeout(DEADLINE):
            while len(got) < n:
                got += [e for e in await sub.next_batch() if isinstance(e, StoredEvent)]
    finally:
        sub.close()
    return got


async def test_events_written_on_another_node_reach_a_subscriber_without_the_poll(
    pg_url: str,
) -> None:
    async with Store.open(pg_url) as node_a, Store.open(pg_url) as node_b:
        hub_a = EventHub(node_a, poll_seconds=POLL_SECONDS)
        hub_b = EventHub(node_b, poll_seconds=POLL_SECONDS)
        await hub_a.start()
        await hub_b.start()
        try:
            assert node_a._listener is not None
            assert await asyncio.to_thread(node_a._listener.connected.wait, DEADLINE)
            collecting = asyncio.ensure_future(_collect(hub_a, 7))
            await asyncio.sleep(0)  # subscribed before the writes
            await node_b.append([_text("b1", 1), _text("b1", 2)])
            await node_a.append([_text("a1", 1)])
            await node_b.append([_text("b1", 3)])
            for n in range(3):
                await node_b.append([_text("b2", n)])
            got = await collecting
            assert [e.id for e in got] == sorted({e.id for e in got})  # once each, in order
            assert [e.agent_id for e in got] == ["b1", "b1", "a1", "b1", "b2", "b2", "b2"]
        finally:
            await hub_a.stop()
            await hub_b.stop()


async def test_a_stopped_hub_is_no_longer_woken(pg_url: str) -> None:
    async with Store.open(pg_url) as node_a, Store.open(pg_url) as node_b:
        hub = EventHub(node_a, poll_seconds=POLL_SECONDS)
        await hub.start()
        await hub.stop()
        assert node_a._listener is not None
        assert all(not v for v in node_a._listener._callbacks.values())
        await node_b.append([_text("b1", 1)])  # nobody listens: nothing fails
