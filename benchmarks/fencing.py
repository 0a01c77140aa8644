"""Fenced writes' cost: store append throughput with no agent fenced, one of them
fenced, and every one fenced (a runner host writing only for agents it leases).

    .venv/bin/python benchmarks/fencing.py [--events 20000] [--tasks 50] [--rounds 3]
        [--no-postgres]

``--tasks`` concurrent asyncio tasks append one event per call, each for its own
agent, into a fresh SQLite file and a fresh database on a private PostgreSQL 15
cluster (``tests/support/pgcluster``: initdb + pg_ctl in a temporary directory,
fsync off as in the tests). With fencing, the store writes as runner host ``h1``,
which holds a lease on the fenced agents (``HostStore.claim``): each batch that
holds a fenced agent's write reads the leases once. The variants alternate within
each round; the medians and their ratio to no fencing are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.pgcluster import PgCluster, server_bin

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText
from agentdeck.core.hosts import Host
from agentdeck.store import Store
from agentdeck.store.hosts import HostStore

VARIANTS = ("none", "one", "all")


async def _ingest(target: Path | str, *, total: int, tasks: int, fenced: str) -> float:
    store = Store.open(target)
    ids = [f"bench{n:04d}" for n in range(tasks)]
    try:
        for agent_id in ids:
            await store.save_agent(
                Agent(
                    id=agent_id,
                    name=agent_id,
                    state=AgentState.RUNNING,
                    spec=AgentSpec(prompt="bench"),
                    cwd="/tmp",
                    created_at=1.0,
                    updated_at=1.0,
                )
            )
        chosen = {"none": [], "one": ids[:1], "all": ids}[fenced]
        if chosen:
            hosts = HostStore(store, heartbeat_seconds=60, lease_seconds=3600)
            await hosts.register(Host("h1", capacity=len(chosen)))
            store.fence_as("h1")
            for lease in await hosts.claim("h1", chosen):
                store.fence(lease.agent_id, lease.token)
        per_task = total // tasks
        now = time.time()

        async def worker(agent_id: str) -> None:
            for i in range(per_task):
                await store.append([AssistantText(agent_id=agent_id, ts=now, text=f"out #{i}")])

        started = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for agent_id in ids:
                tg.create_task(worker(agent_id))
        elapsed = time.perf_counter() - started
    finally:
        await store.close()
    return per_task * tasks / elapsed


def _targets(tmp: Path, cluster: PgCluster | None, name: str) -> list[tuple[str, Path | str]]:
    out: list[tuple[str, Path | str]] = [("sqlite", tmp / f"{name}.db")]
    if cluster is not None:
        out.append(("postgresql", cluster.database()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    cluster: PgCluster | None = None
    base: Path | None = None
    if not args.no_postgres:
        bindir = server_bin()
        if bindir is None:
            sys.exit("no PostgreSQL server binaries (apt-get install postgresql), or --no-postgres")
        base = Path(tempfile.mkdtemp(prefix="agentdeck-pg-bench-"))
        cluster = PgCluster(base, bindir)
        cluster.start()
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    print(" ".join(["$ .venv/bin/python benchmarks/fencing.py", *sys.argv[1:]]))
    print(f"fenced appends: {args.events} events, {args.tasks} tasks (one agent each), 1 a call")
    rates: dict[tuple[str, str], list[float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for variant in VARIANTS:
                    for backend, target in _targets(Path(tmp), cluster, f"{variant}{r}"):
                        rate = asyncio.run(
                            _ingest(target, total=args.events, tasks=args.tasks, fenced=variant)
                        )
                        rates.setdefault((backend, variant), []).append(rate)
    finally:
        if cluster is not None:
            cluster.stop("immediate")
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    for backend in ("sqlite", "postgresql"):
        if (backend, "none") not in rates:
            continue
        floor = statistics.median(rates[(backend, "none")])
        for variant in VARIANTS:
            rate = statistics.median(rates[(backend, variant)])
            print(
                f"  {backend:>10}, fenced {variant:>4}: {rate:>9,.0f} events/s"
                f"  ({rate / floor:.2f}x no fencing)"
            )


if __name__ == "__main__":
    main()
