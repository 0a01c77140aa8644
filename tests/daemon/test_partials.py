"""The hub's partial edits (``daemon.partials``, ``EventHub.follow_partial``) on a
real store: coalesced per agent, in order with the events, only to those who
asked, left out (never a drop) for a follower whose queue is half full, and
never written to the log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.events import AssistantText, StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.daemon.hub import EventHub
from agentdeck.daemon.partials import PartialCoalescer
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = pytest.mark.anyio

DEADLINE = 10.0


@pytest.fixture
async def hub(settings: Settings, tmp_path: Path) -> AsyncIterator[EventHub]:
    settings.ensure_home()
    store = Store.open(settings.db_path)
    hub = EventHub(store, poll_seconds=0.1)
    await hub.start()
    try:
        yield hub
    finally:
        await hub.stop()
        await store.close()


async def test_writes_within_an_interval_are_one_edit_then_the_rest_at_its_end() -> None:
    edits: list[PartialText] = []
    got = asyncio.Event()

    def deliver(edit: PartialText) -> None:
        edits.append(edit)
        got.set()

    coalescer = PartialCoalescer(deliver, interval=3600.0)
    coalescer.write("a1", "m:0", "first ", None)
    async with asyncio.timeout(DEADLINE):
        await got.wait()  # the first edit goes at once
    for word in ("second ", "third ", "fourth "):
        coalescer.write("a1", "m:0", word, None)
    assert [e.text for e in edits] == ["first "]  # the rest waits for the interval
    coalescer.flush("a1")
    assert [e.text for e in edits] == ["first ", "second third fourth "]
    coalescer.write("a1", "m:0", "gone ", None)
    coalescer.end("a1")  # its message came whole: what was held is dropped
    coalescer.flush("a1")
    assert len(edits) == 2 and coalescer.writing == 0
    coalescer.close()


async def test_a_new_block_sends_the_last_words_of_the_one_before() -> None:
    edits: list[PartialText] = []
    coalescer = PartialCoalescer(edits.append, interval=3600.0)
    coalescer.write("a1", "m:0", "one ", None)
    coalescer.flush("a1")
    coalescer.write("a1", "m:0", "two ", None)
    coalescer.write("a1", "m:1", "three ", None)
    assert [(e.block, e.text) for e in edits] == [("m:0", "one "), ("m:0", "two ")]
    coalescer.close()


async def _next(it: AsyncIterator[list[StoredEvent | PartialText]]) -> list[object]:
    async with asyncio.timeout(DEADLINE):
        while True:
            batch = await anext(it)
            if batch:
                return list(batch)


async def test_edits_reach_only_who_asked_in_order_and_are_never_stored(hub: EventHub) -> None:
    partial = hub.follow_partial(after=0, agent_id="a1", heartbeat=0.2)
    plain = hub.follow(after=0, agent_id="a1", heartbeat=0.2)
    other = hub.follow_partial(after=0, agent_id="a2", heartbeat=0.2)
    for it in (partial, plain, other):  # subscribed: the generators run to their wait
        assert await anext(it) == []
    hub.write("a1", "m:0", "hello there ", None)
    first = await _next(partial)
    assert first == [PartialText(agent_id="a1", block="m:0", offset=0, text="hello there ")]
    hub.end("a1")
    [stored] = await hub.store.append(
        [AssistantText(agent_id="a1", ts=time.time(), text="hello there world")]
    )
    assert [e.id for e in await _next(partial)] == [stored.id]  # type: ignore[attr-defined]
    assert [e.id for e in await _next(plain)] == [stored.id]
    assert await anext(other) == []  # another agent's follower: a heartbeat, nothing
    assert [e.type for e in await hub.store.read(limit=100)] == ["assistant_text"]
    for it in (partial, plain, other):
        await it.aclose()  # type: ignore[attr-defined]


async def test_a_half_full_queue_leaves_edits_out_and_drops_no_one(hub: EventHub) -> None:
    hub.max_batches = 4
    sub = hub.subscribe(partial=lambda e: True)
    hub.partials.interval = 0.0
    for i in range(12):
        hub.write("a1", f"m:{i}", f"word{i} ", None)
        hub.partials.flush("a1")
    assert sub._queue.qsize() == 2 and sub.partials_left_out == 10 and not sub.dropped
    sub.close()
