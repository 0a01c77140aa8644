"""No room to write: SQLite's own SQLITE_FULL, and a real full disk (a tmpfs).

Callers waiting on a write get ``DiskFull``, the log says what was not written,
the writer's queue goes on (reads too), an agent's last state gets the room the
store keeps in reserve, and writes work again once there is room."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlalchemy.engine import Connection

from agentdeck.core.agent import AgentState
from agentdeck.core.events import AssistantText
from agentdeck.errors import DiskFull
from agentdeck.store import Store
from agentdeck.store.reserve import Reserve
from tests.support.fulldisk import fill, small_disk

from .conftest import Collector, db_rows, make_agent, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.sqlite_only("the disk-full reserve is SQLite's; PostgreSQL manages its own disk"),
]

BIG = "lorem ipsum " * 80_000  # ~1 MB: never fits in what the WAL already holds


def big(agent_id: str) -> AssistantText:
    return AssistantText(agent_id=agent_id, ts=1.0, text=BIG)


def cap_pages(conn: Connection) -> int:
    """The file may not grow past its size now: SQLite answers SQLITE_FULL."""
    pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())
    conn.exec_driver_sql(f"PRAGMA max_page_count={pages}")
    return pages


def uncap_pages(conn: Connection) -> None:
    conn.exec_driver_sql("PRAGMA max_page_count=1073741823")


async def test_sqlite_full_fails_every_waiting_caller_and_the_writer_goes_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    seen = Collector()
    store.subscribe(seen)
    await store.record([text("a1", 0)], make_agent("a1"))
    await store._write(cap_pages)

    caplog.set_level(logging.ERROR, logger="agentdeck.store.writer")
    writes = [store.append([big("a1")]) for _ in range(5)]
    writes.append(store.record([big("a2")], make_agent("a2", state=AgentState.ERROR)))
    writes.append(store.record([big("a3")], make_agent("a3"), essential=True))
    outcomes = await asyncio.wait_for(asyncio.gather(*writes, return_exceptions=True), 60)

    assert all(isinstance(o, DiskFull) for o in outcomes), outcomes
    message = str(outcomes[0])
    assert message.startswith(f"the disk is full: {store.db_path} could not be written")
    assert "database or disk is full" in message
    said = caplog.text
    assert "the disk is full: not written: " in said
    assert "event(s) of agent a2 (assistant_text)" in said
    assert "agent a2's row (state error)" in said
    assert "lorem" not in said  # what was lost is named, its text is not logged

    # Reads go on; nothing failed reached the log or a subscriber.
    assert [e.agent_id for e in await store.read()] == ["a1"]
    assert [a.id for a in await store.list_agents()] == ["a1"]
    assert len(seen.events) == 1

    await store._write(uncap_pages)  # room again: the next write lands (a3's kept end first)
    stored = await store.record([big("a2")], make_agent("a2", state=AgentState.ERROR))
    assert [e.agent_id for e in await store.read(after=stored[0].id - 2)] == ["a3", "a2"]
    assert (await store.get_agent("a2")).state == AgentState.ERROR
    assert db_rows(store, "SELECT count(*) FROM events") == [(3,)]


async def test_an_end_that_does_not_fit_is_written_once_there_is_room_unless_superseded(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    for agent_id in ("a1", "a2"):
        await store.record([text(agent_id, 0)], make_agent(agent_id))
    await store._write(cap_pages)
    caplog.set_level(logging.WARNING, logger="agentdeck.store.writer")

    for agent_id in ("a1", "a2"):
        end = make_agent(agent_id, state=AgentState.ERROR, last_error="the disk is full: …")
        with pytest.raises(DiskFull):  # its caller hears, as for any write
            await store.record([big(agent_id)], end, essential=True)
    assert "kept to be written once there is room: 1 event(s) of agent a1" in caplog.text
    assert (await store.get_agent("a1")).state == AgentState.RUNNING
    # a2 goes on meanwhile (a row fits in the pages it has): its kept end is stale.
    await store.save_agent(make_agent("a2", state=AgentState.IDLE))
    assert "a newer state was written since: dropped 1 event(s) of agent a2" in caplog.text

    await store._write(uncap_pages)  # room: the next write lands a1's end first
    await store.append([text("a9", 0)])
    assert "written now that the disk has room: 1 event(s) of agent a1" in caplog.text
    assert (await store.get_agent("a1")).state == AgentState.ERROR
    assert (await store.get_agent("a2")).state == AgentState.IDLE
    types = [(e.agent_id, e.type) for e in await store.read()]
    assert types[-2:] == [("a1", "assistant_text"), ("a9", "assistant_text")]


async def test_an_end_still_without_room_at_close_is_said_lost(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(db_path)
    await store._write(cap_pages)
    caplog.set_level(logging.ERROR, logger="agentdeck.store.writer")
    with pytest.raises(DiskFull):
        await store.record([big("a1")], make_agent("a1", state=AgentState.ERROR), essential=True)
    await store.close()
    assert "not written, for good: 1 event(s) of agent a1 (assistant_text); agent a1's row" in (
        caplog.text
    )


@pytest.fixture
def disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    with small_disk(tmp_path / "disk", size="8m") as mounted:
        yield mounted


async def test_a_full_disk_keeps_room_for_an_agents_last_state(
    disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(disk / "home" / "agentdeck.db")
    reserve = disk / "home" / "agentdeck.db.reserve"
    try:
        assert reserve.stat().st_blocks * 512 >= 512 * 1024
        await store.record([text("a1", 0)], make_agent("a1"))
        filler = fill(disk)

        with pytest.raises(DiskFull, match="the disk is full: "):
            await store.record([big("a1")], make_agent("a1"))
        assert reserve.exists()  # not spent on a write that is not essential

        caplog.set_level(logging.WARNING, logger="agentdeck.store.writer")
        end = make_agent("a1", state=AgentState.ERROR, last_error="the disk is full: …")
        await store.record([text("a1", 1)], end, essential=True)
        assert not reserve.exists()
        assert "the room kept for agents' last states (512 KiB) is used now" in caplog.text
        assert (await store.get_agent("a1")).state == AgentState.ERROR  # read back
        assert db_rows(store, "SELECT state FROM agents") == [("error",)]

        # What room it freed stays for the other agents' ends: the rest is refused.
        with pytest.raises(DiskFull, match="room left on its disk is kept for agents' last"):
            await store.record([text("a2", 0)], make_agent("a2"))
        await store.record(
            [text("a2", 1)], make_agent("a2", state=AgentState.ERROR), essential=True
        )
        assert (await store.get_agent("a2")).state == AgentState.ERROR
        with pytest.raises(DiskFull):  # spent: nothing big fits, even essential
            await store.record([big("a1")], essential=True)

        filler.unlink()  # room again: writes land, the reserve is made again
        await store.append([big("a2")])
        assert reserve.stat().st_blocks * 512 >= 512 * 1024
    finally:
        await store.close()
    assert db_rows(store, "PRAGMA integrity_check") == [("ok",)]


def test_the_reserve_leaves_nothing_behind_on_a_full_disk(disk: Path) -> None:
    reserve = Reserve(disk / "room")
    filler = fill(disk)
    assert not reserve.remake_due()
    assert not reserve.make() and not reserve.path.exists()
    filler.unlink()
    assert reserve.remake_due()
    assert reserve.make() and reserve.path.stat().st_size == reserve.size
    assert not reserve.remake_due()
    assert reserve.release() and not reserve.release()
