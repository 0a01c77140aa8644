"""Merge entries name the runner host that queued and took them (issue 30, item 5):
shown in the API's record and in ``agentdeck queue``; a merge a lost host left
queued or mid-merge is taken again by another host that reaches the repository
(``MergeQueue.recover``, as a host reaps), never one of a live host, whatever its
pid looks like on this machine. On PostgreSQL, two hosts' stores and runners."""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.cli import remote
from agentdeck.core.hosts import Host
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.daemon.compose import build_runner
from agentdeck.runner.hosting import RunnerHost
from agentdeck.runner.runner import Runner
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore
from agentdeck.store.merges import MergeStore
from agentdeck.store.schema import hosts as hosts_table
from agentdeck.store.schema import merges
from agentdeck.worktrees import worktree_of
from tests.conftest import make_settings
from tests.support.waiting import eventually
from tests.worktrees.test_queue import worker
from tests.worktrees.test_queue_hosts import hosts as hosts
from tests.worktrees.test_queue_hosts import shared_repo as shared_repo

pytestmark = pytest.mark.anyio


async def named(pair: list[tuple[Store, Runner]]) -> None:
    """Both registered as runner hosts ``host-a`` and ``host-b``, as ``agentdeck
    runner`` does (``RunnerHost.start`` names its merge queue)."""
    for (store, runner), name in zip(pair, ("host-a", "host-b"), strict=True):
        await HostStore(store).register(Host(name, capacity=2))
        runner.merges.host = name


async def lose(store: Store, name: str) -> None:
    """``name`` stops heartbeating: its last heartbeat an hour ago."""

    def op(conn: Connection) -> None:
        conn.execute(
            sa.update(hosts_table)
            .where(hosts_table.c.name == name)
            .values(heartbeat_at=hosts_table.c.heartbeat_at - 3600)
        )

    await store._write(op)


async def left_merging(store: Store, runner: Runner, agent_id: str, host: str) -> MergeEntry:
    """An entry host ``host`` took and never finished (its process is this one: a
    pid that runs here, which must not make it look alive)."""
    agent = await store.get_agent(agent_id)
    wt = worktree_of(agent)
    entry = MergeEntry(
        id="mg" + secrets.token_hex(6), agent_id=agent.id, repo=wt.repo, branch=wt.branch,
        target="main", strategy="merge", test="true", state=MergeState.MERGING, by="user:test",
        enqueued_at=time.time(), started_at=time.time(), owner_pid=os.getpid(), owner_host=host,
    )  # fmt: skip
    return await MergeStore(store).create(entry)


async def test_an_entry_names_its_host_in_the_api_record_and_the_queue(
    hosts: list[tuple[Store, Runner]],  # noqa: F811
    shared_repo: Path,  # noqa: F811
) -> None:
    await named(hosts)
    (store, runner), _ = hosts
    agent = await worker(store, runner, shared_repo, "named", {2: "named was here"})
    queued = await runner.merge(agent, test="true", wait=False, by="user:test")
    assert queued.owner_host == "host-a"
    done = await runner.merges.wait(queued.id)
    assert done.state is MergeState.LANDED and done.owner_host == "host-a"
    stored = await MergeStore(hosts[1][0]).get(done.id)  # as the other host reads it
    assert stored.owner_host == "host-a"
    shown = stored.result()
    assert shown["owner_host"] == "host-a"
    assert MergeEntry.from_result(shown).owner_host == "host-a"  # RemoteDeck's record
    assert " landed on host-a" in remote.describe_merge(shown)
    assert remote.describe_merge(shown) == stored.describe()
    one_machine = dataclasses.replace(stored, owner_host=None).result()
    assert " landed on host-a" not in remote.describe_merge(one_machine)
    assert "  landed: " in remote.describe_merge(one_machine)


async def test_a_merge_left_by_a_lost_host_is_taken_again_by_another(
    hosts: list[tuple[Store, Runner]],  # noqa: F811
    shared_repo: Path,  # noqa: F811
) -> None:
    await named(hosts)
    (store_a, runner_a), (store_b, runner_b) = hosts
    agent = await worker(store_a, runner_a, shared_repo, "orphan", {5: "orphan was here"})
    entry = await left_merging(store_a, runner_a, agent.id, "host-a")
    elsewhere = dataclasses.replace(
        entry, id="mg" + secrets.token_hex(6), repo="/nowhere/on/this/machine"
    )
    await MergeStore(store_a).create(elsewhere)

    # host-a is alive: its merge is its own, its pid (one that runs) says nothing.
    assert await runner_b.merges.recover(hosts_only=True) == []
    assert await runner_b.merges.recover() == []

    await lose(store_a, "host-a")
    taken = await runner_b.merges.recover(hosts_only=True)
    assert [e.id for e in taken] == [entry.id]  # not the one whose repository is not here
    done = await runner_b.merges.wait(entry.id)
    assert done.state is MergeState.LANDED, done.reason
    assert done.owner_host == "host-b"
    assert "orphan was here" in (shared_repo / "shared.txt").read_text()
    left = await MergeStore(store_b).get(elsewhere.id)
    assert left.state is MergeState.MERGING and left.owner_host == "host-a"
    # Taken once: asked again, nothing more.
    assert await runner_b.merges.recover(hosts_only=True) == []


@pytest.fixture
async def reaping_host(tmp_path: Path, pg_url: str) -> AsyncIterator[tuple[Store, Runner]]:
    """A third machine serving as runner host ``host-c``, with a short lease (its
    reaping loop looks at the lost hosts' merges once a lease)."""
    settings = make_settings(
        tmp_path / "host-c", database_url=pg_url,
        runner_heartbeat_seconds=0.2, runner_lease_seconds=1.0,
    )  # fmt: skip
    settings.ensure_home()
    store = Store.open(pg_url)
    runner = build_runner(store, settings)
    serving = RunnerHost(runner, Host("host-c", capacity=1))
    try:
        await serving.start()
        yield store, runner
    finally:
        try:
            await serving.close()
            await runner.shutdown()
            await serving.stopped()
        finally:
            await store.close()


async def test_a_stopped_host_s_queued_merge_is_taken_by_a_serving_host_s_reaping(
    hosts: list[tuple[Store, Runner]],  # noqa: F811
    shared_repo: Path,  # noqa: F811
    reaping_host: tuple[Store, Runner],
) -> None:
    """A host that stopped with an entry still queued: a serving host's reaping
    loop (``RunnerHost._reaps``) merges it, under its own name."""
    await named(hosts)
    (store_a, runner_a), _ = hosts
    store_c, runner_c = reaping_host
    assert runner_c.merges.host == "host-c"  # named as it started serving
    agent = await worker(store_a, runner_a, shared_repo, "stopped", {7: "stopped was here"})
    entry = await left_merging(store_a, runner_a, agent.id, "host-a")

    def requeue(conn: Connection) -> None:
        conn.execute(
            sa.update(merges).where(merges.c.id == entry.id).values(state="queued", started_at=None)
        )

    await store_a._write(requeue)
    await HostStore(store_a).stop("host-a")

    async def landed() -> MergeEntry | None:
        found = await MergeStore(store_c).get(entry.id)
        return found if found.state is MergeState.LANDED else None

    done = await eventually(landed, timeout=60, what="the stopped host's merge to land")
    assert done.owner_host == "host-c"
    assert "stopped was here" in (shared_repo / "shared.txt").read_text()
