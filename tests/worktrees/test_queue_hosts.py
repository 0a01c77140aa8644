"""The merge queue across runner hosts: two hosts (two homes, two stores) on one
PostgreSQL deck merging into one repository at once go one at a time, each on
what the other landed, under an advisory lock keyed by the repository's real path;
a lock left by a host whose connection died no longer holds anyone back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.merge_queue import MergeState
from agentdeck.daemon.compose import build_runner
from agentdeck.runner.merge_queue import merge_lock_name
from agentdeck.runner.runner import Runner
from agentdeck.store import Store
from agentdeck.store.advisory import lock_key
from agentdeck.store.merges import MergeStore
from agentdeck.store.schema import merges
from tests.conftest import make_settings
from tests.support.waiting import eventually
from tests.worktrees.conftest import git, make_repo
from tests.worktrees.test_queue import LINES, worker

pytestmark = pytest.mark.anyio


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
async def hosts(tmp_path: Path, pg_url: str) -> AsyncIterator[list[tuple[Store, Runner]]]:
    """Two hosts' worth: each its own home, store and runner, on one database."""
    opened: list[tuple[Store, Runner]] = []
    try:
        for name in ("a", "b"):
            settings = make_settings(tmp_path / f"host-{name}", database_url=pg_url)
            settings.ensure_home()
            store = Store.open(pg_url)
            opened.append((store, build_runner(store, settings)))
        yield opened
    finally:
        for store, runner in opened:
            try:
                await runner.shutdown()
            finally:
                await store.close()


@pytest.fixture
def shared_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"shared.txt": LINES})


async def advisory_locks(url: str, key: int) -> list[tuple[bool, str]]:
    """Who holds or waits for the advisory lock ``key``: (granted, application)."""
    # pg_locks splits a bigint key into classid (high 32 bits) and objid (low).
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    async with await psycopg.AsyncConnection.connect(libpq(url), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT l.granted, a.application_name FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.objsubid = 1 "
            "AND l.classid::bigint = %s AND l.objid::bigint = %s ORDER BY l.granted DESC",
            (unsigned >> 32, unsigned & 0xFFFFFFFF),
        )
        return [(bool(g), str(n)) for g, n in await cur.fetchall()]


async def test_two_hosts_merging_into_one_repository_at_once_go_one_at_a_time(
    hosts: list[tuple[Store, Runner]], shared_repo: Path, tmp_path: Path, pg_url: str
) -> None:
    (store_a, runner_a), (store_b, runner_b) = hosts
    first = await worker(store_a, runner_a, shared_repo, "onhosta", {1: "a was here"})
    second = await worker(store_b, runner_b, shared_repo, "onhostb", {20: "b was here"})
    log, gate = tmp_path / "tests.log", tmp_path / "go"
    # Each test run says what it found of the other's change, then waits for the gate.
    test = (
        f"echo start $(grep -c 'was here' shared.txt) >> {log}; "
        f"while [ ! -e {gate} ]; do sleep 0.05; done; echo end >> {log}"
    )
    queued = await asyncio.gather(
        runner_a.merge(first, test=test, wait=False, by="user:test"),
        runner_b.merge(second, test=test, wait=False, by="user:test"),
    )
    key = lock_key(merge_lock_name(str(shared_repo)))
    await eventually(
        lambda: asyncio.to_thread(lambda: log.exists() and log.read_text() == "start 1\n"),
        what="one merge's test to start",
    )
    # One host merges; the other waits on the lock in the database, its entry
    # still queued (not taken, not mid-merge behind a lock file).
    locks = await eventually(
        lambda: _two(pg_url, key),
        what="the other host to wait on the repository's lock",
    )
    assert locks == [(True, "agentdeck-lock"), (False, "agentdeck-lock")]
    states = sorted([str((await MergeStore(store_a).get(e.id)).state) for e in queued])
    assert states == ["merging", "queued"]

    gate.touch()
    done = [
        await runner.merges.wait(e.id)
        for runner, e in zip((runner_a, runner_b), queued, strict=True)
    ]
    assert [e.state for e in done] == [MergeState.LANDED, MergeState.LANDED]
    # Never two tests at once: the second ran on what the first landed.
    assert log.read_text().split("\n") == ["start 1", "end", "start 2", "end", ""]
    text = (shared_repo / "shared.txt").read_text()
    assert "a was here" in text and "b was here" in text  # no lost update
    commits = sorted(done, key=lambda e: e.finished_at or 0)
    assert git(shared_repo, "rev-parse", "main").strip() == commits[1].commit
    git(shared_repo, "merge-base", "--is-ancestor", str(commits[0].commit), str(commits[1].commit))
    assert await advisory_locks(pg_url, key) == []  # released with the merges


async def _two(url: str, key: int) -> list[tuple[bool, str]] | None:
    found = await advisory_locks(url, key)
    return found if len(found) == 2 else None


async def test_a_lock_left_by_a_host_whose_connection_died_holds_nobody_back(
    hosts: list[tuple[Store, Runner]], shared_repo: Path, pg_url: str
) -> None:
    (store, runner), _ = hosts
    agent = await worker(store, runner, shared_repo, "waiter", {3: "waiter was here"})
    key = lock_key(merge_lock_name(str(shared_repo)))
    # Another host, mid-merge in this repository: it holds the lock.
    other = await psycopg.AsyncConnection.connect(libpq(pg_url), autocommit=True)
    try:
        await other.execute("SELECT pg_advisory_lock(%s)", (key,))
        entry = await runner.merge(agent, test="true", wait=False, by="user:test")
        await eventually(lambda: _two(pg_url, key), what="the merge to wait on the lock")
        assert (await MergeStore(store).get(entry.id)).state is MergeState.QUEUED
        # That host dies: its connection goes, and its lock with it.
        async with await psycopg.AsyncConnection.connect(libpq(pg_url), autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (other.info.backend_pid,))
        done = await asyncio.wait_for(runner.merges.wait(entry.id), 60)
    finally:
        await other.close()
    assert done.state is MergeState.LANDED, done.reason
    assert "waiter was here" in (shared_repo / "shared.txt").read_text()


async def test_a_merge_stopped_while_it_waits_for_the_lock_stays_queued_and_waits_no_more(
    hosts: list[tuple[Store, Runner]], shared_repo: Path, pg_url: str
) -> None:
    (store, runner), _ = hosts
    agent = await worker(store, runner, shared_repo, "stopped", {4: "stopped was here"})
    key = lock_key(merge_lock_name(str(shared_repo)))
    async with await psycopg.AsyncConnection.connect(
        libpq(pg_url), autocommit=True, application_name="another-host"
    ) as other:
        await other.execute("SELECT pg_advisory_lock(%s)", (key,))
        entry = await runner.merge(agent, test="true", wait=False, by="user:test")
        await eventually(lambda: _two(pg_url, key), what="the merge to wait on the lock")
        await runner.merges.close()  # the daemon stopping
        assert await advisory_locks(pg_url, key) == [(True, "another-host")]
    assert (await MergeStore(store).get(entry.id)).state is MergeState.QUEUED  # taken again later
    assert await advisory_locks(pg_url, key) == []


async def test_a_host_starting_while_another_merges_neither_waits_for_it_nor_clears_its_merge(
    hosts: list[tuple[Store, Runner]], shared_repo: Path, tmp_path: Path, pg_url: str
) -> None:
    (store_a, runner_a), (store_b, runner_b) = hosts
    agent = await worker(store_a, runner_a, shared_repo, "busy", {6: "busy was here"})
    log, gate = tmp_path / "tests.log", tmp_path / "go"
    test = f"echo start >> {log}; while [ ! -e {gate} ]; do sleep 0.05; done; echo end >> {log}"
    entry = await runner_a.merge(agent, test=test, wait=False, by="user:test")
    await eventually(
        lambda: asyncio.to_thread(lambda: log.exists() and log.read_text() == "start\n"),
        what="host a's merge test to start",
    )
    # Host a's pid, as host b sees it: a process that is not there.
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()

    def elsewhere(conn: Connection) -> None:
        conn.execute(sa.update(merges).where(merges.c.id == entry.id).values(owner_pid=gone.pid))

    await store_a._write(elsewhere)
    # Host b starts: it takes the entry as an orphan, but its start is not held up
    # by host a's merge, and what that merge works in is left alone.
    taken = await asyncio.wait_for(runner_b.merges.recover(), 30)
    assert [e.id for e in taken] == [entry.id]
    scratch = [p for p in (tmp_path / "host-a" / "home").rglob("merge-*") if p.is_dir()]
    assert scratch and all(p.exists() for p in scratch)
    gate.touch()
    landed = await runner_a.merges.wait(entry.id)
    assert landed.state is MergeState.LANDED, landed.reason
    again = await runner_b.merges.wait(entry.id)  # taken there after a's merge: nothing left
    assert again.state is MergeState.LANDED and again.commit == landed.commit
    assert log.read_text() == "start\nend\n"  # merged once


async def test_a_merge_whose_lock_cannot_be_taken_fails_saying_so_and_merges_nothing(
    hosts: list[tuple[Store, Runner]], shared_repo: Path, pg_url: str
) -> None:
    (store, runner), _ = hosts
    agent = await worker(store, runner, shared_repo, "nolock", {7: "nolock was here"})
    before = git(shared_repo, "rev-parse", "main").strip()
    database = pg_url.rsplit("/", 1)[1]
    admin_url = libpq(pg_url.rsplit("/", 1)[0] + "/postgres")
    await asyncio.gather(*(MergeStore(store).list_merges() for _ in range(4)))  # pooled
    # New connections to the deck's database are refused (the store's are open).
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        try:
            entry = await runner.merge(agent, test="true", wait=False, by="user:test")
            done = await asyncio.wait_for(runner.merges.wait(entry.id), 60)
        finally:
            await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    assert done.state is MergeState.FAILED
    assert done.reason and done.reason.startswith("not merged: could not take the lock")
    assert "merge:" in done.reason
    assert git(shared_repo, "rev-parse", "main").strip() == before  # nothing landed
