"""The live feed across two API nodes on one PostgreSQL database: how long an event
written through node B takes to reach the subscribers of node A's hub.

    .venv/bin/python benchmarks/cluster_feed.py [--rate 1000] [--seconds 10]
        [--subscribers 100] [--poll-seconds 1.0]

Two ``Store``s on one fresh database of a private PostgreSQL 15 cluster
(``tests/support/pgcluster``: initdb + pg_ctl in a temporary directory, fsync off
as in the tests), as two nodes would have; an ``EventHub`` on node A with
``--subscribers`` subscribers (what SSE streams read); ``--rate`` events a second
written through node B, in a process of its own, ten agents, one event per append,
paced every 10 ms. Latency: from the moment an append was due (wall clock, one
machine) to the moment a subscriber got the event, over every (event, subscriber)
pair; p50/p99/max printed. Variants:

- **notify**: the hub woken by node B's ``agentdeck_events`` NOTIFY (``store.listen``),
  the poll every ``--poll-seconds`` as the fallback (as deployed);
- **poll**: no NOTIFY, the poll alone (what the hub did before).

Node A's hub and its subscribers share one process and event loop, as on an API
node (whose SSE streams also write the HTTP responses, not done here). Goal (issue 30): p99 ≤
150 ms at 1,000 events/s with 100 subscribers.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.pgcluster import PgCluster, server_bin

from agentdeck.core.events import AssistantText, StoredEvent
from agentdeck.daemon.hub import EventHub
from agentdeck.store import Store

AGENTS = 10
TICK = 0.01


def _node_b(url: str, rate: int, seconds: float) -> None:
    """Node B, in a process of its own: ``rate`` events a second, each stamped with
    the wall-clock time its append was due (``ts``)."""

    async def main() -> None:
        async with Store.open(url) as node_b:
            total = int(rate * seconds)
            per_tick = max(1, round(rate * TICK))
            start = time.time() + 0.1
            writes: list[asyncio.Task[list[StoredEvent]]] = []
            n = 0
            while n < total:
                at = start + (n // per_tick) * TICK
                delay = at - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                for _ in range(min(per_tick, total - n)):
                    event = AssistantText(agent_id=f"ag{n % AGENTS}", ts=at, text=f"e{n}")
                    writes.append(asyncio.create_task(node_b.append([event])))
                    n += 1
            await asyncio.gather(*writes)

    asyncio.run(main())


async def _run(
    url: str, *, rate: int, seconds: float, subscribers: int, poll: float, notify: bool
) -> tuple[list[float], int, int]:
    """Latencies (s), events written, deliveries missing."""
    async with Store.open(url) as node_a:
        if not notify:
            node_a.listen = lambda channel, callback: None  # type: ignore[method-assign]
        hub = EventHub(node_a, poll_seconds=poll)
        await hub.start()
        if notify:
            assert node_a._listener is not None
            await asyncio.to_thread(node_a._listener.connected.wait, 10)
        latencies: list[float] = []
        total = int(rate * seconds)
        got = [0]

        async def subscriber() -> None:
            sub = hub.subscribe()
            seen = 0
            try:
                while seen < total:
                    batch = await sub.next_batch(timeout=5.0)
                    if not batch:
                        return
                    now = time.time()
                    for e in batch:
                        if isinstance(e, StoredEvent):
                            latencies.append(now - e.ts)
                            seen += 1
            finally:
                got[0] += seen
                sub.close()

        readers = [asyncio.create_task(subscriber()) for _ in range(subscribers)]
        await asyncio.sleep(0.2)  # all subscribed
        writer = multiprocessing.get_context("spawn").Process(
            target=_node_b, args=(url, rate, seconds)
        )
        writer.start()
        await asyncio.to_thread(writer.join, seconds + 60)
        await asyncio.wait(readers, timeout=poll + 10)
        for task in readers:
            task.cancel()
        await hub.stop()
        return latencies, total, total * subscribers - got[0]


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    args = parser.parse_args()
    bindir = server_bin()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="agentdeck-pg-bench-"))
    cluster = PgCluster(base, bindir)
    cluster.start()
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    print(" ".join(["$ .venv/bin/python benchmarks/cluster_feed.py", *sys.argv[1:]]))
    print(
        f"two nodes on one PostgreSQL: {args.rate} events/s through node B for "
        f"{args.seconds:g} s, {args.subscribers} subscribers on node A's hub, "
        f"poll every {args.poll_seconds:g} s"
    )
    try:
        for variant in ("notify", "poll"):
            lat, total, missing = asyncio.run(
                _run(
                    cluster.database(),
                    rate=args.rate,
                    seconds=args.seconds,
                    subscribers=args.subscribers,
                    poll=args.poll_seconds,
                    notify=variant == "notify",
                )
            )
            print(
                f"  {variant:>6}: p50 {_ms(lat, 0.5):7.1f} ms  p99 {_ms(lat, 0.99):7.1f} ms  "
                f"max {max(lat) * 1000:7.1f} ms  mean {statistics.fmean(lat) * 1000:7.1f} ms  "
                f"({total} events, {len(lat)} deliveries, {missing} missing)"
            )
    finally:
        cluster.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
