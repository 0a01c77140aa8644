"""Event ids in commit order across processes on one PostgreSQL database.

Several writer processes append in batches while a follower reads ``id > last``,
as an SSE client, ``logs -f`` or the TUI resume. A follower must never skip an
id that is committed later: the ids it saw, in the order it saw them, are every
id in the log at the end. Without the store's advisory write lock it does skip
(the last test shows that, by construction), since a sequence hands out ids
in the order transactions ask, not in the order they commit.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from typing import Any

import pytest

from agentdeck.core.events import AssistantText
from agentdeck.store import Store, dialect_postgres, writer, writes

from . import commit_order_worker
from .conftest import db_rows

pytestmark = pytest.mark.anyio

WRITERS = 4
BATCHES = 25
PER_BATCH = 8


async def _follow_while_writing(url: str) -> tuple[list[int], list[int]]:
    """(what the follower saw, in order; every id in the log at the end)."""
    async with Store.open(url):  # the schema, before the writers race to make it
        pass
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [
        ctx.Process(
            target=commit_order_worker.write,
            args=(url, w, BATCHES, PER_BATCH, go),
        )
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    seen: list[int] = []
    try:
        async with Store.open(url) as follower:
            go.set()
            last = 0
            deadline = time.monotonic() + 120
            while True:
                done = all(not p.is_alive() for p in procs)
                batch = await follower.read(after=last, limit=1000)
                seen.extend(e.id for e in batch)
                if batch:
                    last = batch[-1].id
                elif done:
                    break
                assert time.monotonic() < deadline, "the writers did not finish in time"
                await asyncio.sleep(0.001)  # the follower under test polls, under a deadline
    finally:
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * WRITERS
    every = [int(r[0]) for r in db_rows(url, "SELECT id FROM events ORDER BY id")]
    return seen, every


async def test_a_follower_sees_every_event_of_several_writer_processes_in_id_order(
    pg_url: str,
) -> None:
    seen, every = await _follow_while_writing(pg_url)
    assert len(every) == WRITERS * BATCHES * PER_BATCH
    assert seen == sorted(seen)
    assert seen == every  # nothing skipped: no id committed below one already read


async def _held_while_another_commits(url: str) -> tuple[list[int], list[int]]:
    """A transaction draws its id and is held before its commit while a second
    writer appends and a follower reads; then it commits and the follower reads on.
    (What the follower saw, in order; every id in the log at the end.)"""
    inserted, release = threading.Event(), threading.Event()
    real = writes.insert_events

    def held(conn: Any, rows: Any) -> list[int]:
        ids = real(conn, rows)
        if rows and rows[0]["agent_id"] == "slow":  # its ids drawn, its commit held
            inserted.set()
            release.wait(60)
        return ids

    opened = (Store.open(url) for _ in range(3))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer, "insert_events", held)
        async with next(opened) as first, next(opened) as second, next(opened) as follower:
            slow = asyncio.create_task(
                first.append([AssistantText(agent_id="slow", ts=time.time(), text="a")])
            )
            fast: asyncio.Task[Any] | None = None
            try:
                assert await asyncio.to_thread(inserted.wait, 60)
                fast = asyncio.create_task(
                    second.append([AssistantText(agent_id="fast", ts=time.time(), text="b")])
                )
                # Without the lock the second commits now; with it, it waits its turn.
                await asyncio.wait([fast], timeout=0 if _locking() else 60)
                seen = [e.id for e in await follower.read(after=0)]
            finally:
                release.set()
                await slow
                if fast is not None:
                    await fast
            seen += [e.id for e in await follower.read(after=seen[-1] if seen else 0)]
    every = [int(r[0]) for r in db_rows(url, "SELECT id FROM events ORDER BY id")]
    return seen, every


def _locking() -> bool:
    return dialect_postgres.take_write_lock is not _no_lock


def _no_lock(conn: Any) -> None:
    return None


async def test_a_transaction_held_before_its_commit_is_not_skipped(pg_url: str) -> None:
    """By construction: with the advisory lock a later writer cannot draw an id
    until the held transaction commits, so the follower misses nothing."""
    seen, every = await _held_while_another_commits(pg_url)
    assert len(every) == 2 and seen == every


async def test_without_the_write_lock_the_follower_misses_events(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks above have teeth, shown by construction: without the advisory
    lock, a transaction that drew its id first and commits last is skipped for good
    by a follower reading ``id > last`` in between."""
    monkeypatch.setattr(dialect_postgres, "take_write_lock", _no_lock)
    seen, every = await _held_while_another_commits(pg_url)
    assert len(every) == 2 and seen == sorted(seen)
    assert set(every) - set(seen) == {every[0]}, "the follower saw the late commit's id"
