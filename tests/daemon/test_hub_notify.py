"""The hub wakes on NOTIFY (``daemon.hub``, ``store.listen``): two Stores on one
PostgreSQL database, as two API nodes, a hub on each polling only every 30 s;
events written through node B reach a subscriber of node A's hub without the poll,
each once and in id order, its own writes and the other's interleaved."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agentdeck.core.events import AssistantText, StoredEvent
from agentdeck.daemon.hub import EventHub
from agentdeck.store import Store
from tests.support.waiting import eventually

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


async def test_own_notify_hands_on_nothing_before_its_writer_is_told(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our own NOTIFY can wake the hub while the writer thread, past COMMIT, has not
    yet told the write's caller. The hub reads the batch from the log then, but
    hands it on only after the caller has resumed: a follower handed an agent's
    ``state_changed`` asks the session for the agent and must find the new state
    (``agentdeck run`` on PostgreSQL printed ``running`` and exited 1)."""
    async with Store.open(pg_url) as store:
        hub = EventHub(store, poll_seconds=POLL_SECONDS)
        await hub.start()
        try:
            assert store._listener is not None
            assert await asyncio.to_thread(store._listener.connected.wait, DEADLINE)
            writer = store._writer
            committed, hold = threading.Event(), threading.Event()
            settle = writer._settle

            def held(outcomes: Any, stored: Any = ()) -> None:  # the writer thread
                committed.set()
                hold.wait(DEADLINE)
                settle(outcomes, stored)

            monkeypatch.setattr(writer, "_settle", held)
            reads: list[list[StoredEvent]] = []
            read = store.read

            async def counted(**kwargs: Any) -> list[StoredEvent]:
                got = await read(**kwargs)
                reads.append(got)
                return got

            monkeypatch.setattr(store, "read", counted)
            sub = hub.subscribe()
            shown = {"state": "running"}  # what a session shows of its agent

            async def session() -> int:
                written = await store.append([_text("a1", 1)])
                shown["state"] = "done"  # once told, as SessionState._commit does
                return written[0].id

            writing = asyncio.ensure_future(session())
            assert await asyncio.to_thread(committed.wait, DEADLINE)

            async def read_it() -> bool:
                return any(e.agent_id == "a1" for batch in reads for e in batch)

            await eventually(read_it, timeout=DEADLINE, what="the hub to read the batch")
            assert sub._queue.empty(), "handed on before its writer was told"
            assert not writing.done()
            hold.set()
            batch = await sub.next_batch(timeout=DEADLINE)
            assert shown["state"] == "done", "handed on before its writer resumed"
            assert [e.id for e in batch if isinstance(e, StoredEvent)] == [await writing]
            assert store.unsettled_floor() is None
            sub.close()
        finally:
            hold.set()
            await hub.stop()
