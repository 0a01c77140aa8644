"""LISTEN/NOTIFY (``store.listen``, ``Store.listen``/``notify``): on PostgreSQL a
write through another Store (another connection, as another host would make)
wakes this one's listeners with the right payload, the listener connects again
after a server restart, and closing stops its thread; on SQLite nothing runs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agentdeck.errors import StoreError, UsageError
from agentdeck.store import Store
from agentdeck.store.listen import COMMANDS, EVENTS, QUEUE
from tests.store.conftest import make_agent, text
from tests.support.pgcluster import PgCluster

pytestmark = pytest.mark.anyio

DEADLINE = 20.0


class Heard:
    """A callback that keeps the payloads it was given, on the loop."""

    def __init__(self) -> None:
        self.payloads: list[str] = []
        self._changed = asyncio.Event()

    def __call__(self, payload: str) -> None:
        self.payloads.append(payload)
        self._changed.set()

    async def wait_for(self, payload: str) -> None:
        async with asyncio.timeout(DEADLINE):
            while payload not in self.payloads:
                self._changed.clear()
                await self._changed.wait()


def _listener_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentdeck-listener"]


async def _listening(store: Store) -> None:
    listener = store._listener
    assert listener is not None
    assert await asyncio.to_thread(listener.connected.wait, DEADLINE)


async def test_a_write_through_another_store_wakes_a_listener(pg_url: str) -> None:
    async with Store.open(pg_url) as mine, Store.open(pg_url) as theirs:
        events, commands, queue, also = Heard(), Heard(), Heard(), Heard()
        mine.listen(EVENTS, events)
        mine.listen(EVENTS, also)  # several callbacks on one channel
        mine.listen(COMMANDS, commands)
        mine.listen(QUEUE, queue)
        await _listening(mine)
        await theirs.save_agent(make_agent("a1"))
        stored = await theirs.append([text("a1", 1), text("a1", 2)])
        await events.wait_for(str(stored[-1].id))  # the batch's last event id
        await also.wait_for(str(stored[-1].id))
        await theirs.enqueue_command("a1", "send", {"text": "hi"})
        await commands.wait_for("a1")
        await theirs.notify(QUEUE, "a1")
        await queue.wait_for("a1")
        assert str(stored[0].id) not in events.payloads  # one per batch, not per event


async def test_a_notify_is_delivered_after_what_was_queued_before_it(pg_url: str) -> None:
    async with Store.open(pg_url) as mine, Store.open(pg_url) as theirs:
        heard = Heard()
        mine.listen(QUEUE, heard)
        await _listening(mine)
        written = asyncio.ensure_future(theirs.append([text("a1", 1)]))
        await asyncio.sleep(0)  # the append is queued (its task ran up to the writer)
        sent = theirs.notify(QUEUE, "1")
        await heard.wait_for("1")
        assert [e.agent_id for e in await mine.read()] == ["a1"]  # committed before
        await sent
        await written


async def test_the_listener_connects_again_after_a_server_restart(
    pg_cluster: PgCluster, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with Store.open(pg_url) as mine, Store.open(pg_url) as theirs:
        heard = Heard()
        mine.listen(QUEUE, heard)
        await _listening(mine)
        await theirs.notify(QUEUE, "before")
        await heard.wait_for("before")
        await asyncio.to_thread(pg_cluster.restart)
        await heard.wait_for("")  # back: told to look (what was sent meanwhile is lost)
        listener = mine._listener
        assert listener is not None and listener.connections == 2
        await _listening(mine)
        await theirs.notify(QUEUE, "after")  # the writer reconnects too
        await heard.wait_for("after")
    said = [r.getMessage() for r in caplog.records if r.name == "agentdeck.store.listen"]
    assert len([m for m in said if m.startswith("lost the notification connection")]) == 1
    assert len([m for m in said if m.startswith("listening to")]) == 1


async def test_closing_the_store_stops_the_listener_thread(pg_url: str) -> None:
    store = Store.open(pg_url)
    store.listen(EVENTS, Heard())
    await _listening(store)
    assert len(_listener_threads()) >= 1
    thread = store._listener._thread  # type: ignore[union-attr]
    assert thread is not None and thread.is_alive()
    await store.close()
    assert not thread.is_alive()
    assert thread not in _listener_threads()
    with pytest.raises(StoreError, match="closed"):
        store.listen(EVENTS, Heard())  # no thread started again
    assert thread not in _listener_threads() and not store._listener.alive  # type: ignore[union-attr]


async def test_an_unlistened_callback_is_not_called(pg_url: str) -> None:
    async with Store.open(pg_url) as store:
        gone, kept = Heard(), Heard()
        store.listen(QUEUE, gone)
        store.listen(QUEUE, kept)
        store.unlisten(QUEUE, gone)
        await _listening(store)
        await store.notify(QUEUE, "x")
        await kept.wait_for("x")
        assert gone.payloads == []


async def test_on_sqlite_listen_and_notify_do_nothing(db_path: Path) -> None:
    before = len(_listener_threads())
    async with Store.open(db_path) as store:
        assert not store.listens
        heard = Heard()
        store.listen(EVENTS, heard)
        await store.notify(EVENTS, "1")
        await store.append([text("a1", 1)])
        await store.enqueue_command("a1", "send", {"text": "hi"})
        assert store._listener is None and len(_listener_threads()) == before
        assert heard.payloads == []


@pytest.mark.parametrize("channel", ["", "Bad", "x;drop", "a" * 64, "1abc"])
async def test_bad_channels_and_payloads_are_refused(db_path: Path, channel: str) -> None:
    async with Store.open(db_path) as store:
        with pytest.raises(UsageError, match="bad notification channel"):
            store.listen(channel, Heard())
        with pytest.raises(UsageError, match="bad notification channel"):
            await store.notify(channel)
        with pytest.raises(UsageError, match="payload"):
            await store.notify(QUEUE, "x" * 9000)
        with pytest.raises(UsageError, match="payload"):
            await store.notify(QUEUE, "a\x00b")
