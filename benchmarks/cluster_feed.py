"""The live feed across two API nodes on one PostgreSQL database: how long an event
written through node B takes to reach the subscribers of node A's hub.

    .venv/bin/python benchmarks/cluster_feed.py [--rate 1000] [--seconds 10]
        [--subscribers 100] [--poll-seconds 1.0]

Two ``Store``s on one fresh database of a private PostgreSQL 15 cluster
(``tests/support/pgcluster``: initdb + pg_ctl in a temporary directory, fsync off
as in the tests), as two nodes would have; an ``EventHub`` on node A with
``--subscribers`` subscribers (what SSE streams read); ``--rate`` events a second
written through node B, ten agents, one event per append, paced every 10 ms.
Latency: from the moment an append was due to the moment a subscriber got the
event, over every (event, subscriber) pair; p50/p99/max printed. Variants:

- **notify**: the hub woken by node B's ``agentdeck_events`` NOTIFY (``store.listen``),
  the poll every ``--poll-seconds`` as the fallback (as deployed);
- **poll**: no NOTIFY, the poll alone (what the hub did before).

Everything runs in one process on one event loop (both nodes, the writers, the
subscribers): a pessimistic figure on a 2-core machine. Goal (issue 30): p99 ≤
150 ms at 1,000 events/s with 100 subscribers.
"""

from __future__ import annotations

import argparse
import asyncio
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


async def _run(
    url: str, *, rate: int, seconds: float, subscribers: int, poll: float, notify: bool
) -> tuple[list[float], int, int]:
    """Latencies (s), events written, deliveries missing."""
    async with Store.open(url) as node_a, Store.open(url) as node_b:
        if not notify:
            node_a.listen = lambda channel, callback: None  # type: ignore[method-assign]
        hub = EventHub(node_a, poll_seconds=poll)
        await hub.start()
        if notify:
            assert node_a._listener is not None
            await asyncio.to_thread(node_a._listener.connected.wait, 10)
        due: dict[str, float] = {}  # the event's text -> when its append was due
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
                    now = time.perf_counter()
                    for e in batch:
                        if isinstance(e, StoredEvent):
                            latencies.append(now - due[e.data["text"]])
                            seen += 1
            finally:
                got[0] += seen
                sub.close()

        async def write(text: str, agent: str) -> None:
            await node_b.append([AssistantText(agent_id=agent, ts=time.time(), text=text)])

        readers = [asyncio.create_task(subscriber()) for _ in range(subscribers)]
        await asyncio.sleep(0.2)  # all subscribed
        per_tick = max(1, round(rate * TICK))
        start = time.perf_counter()
        writes: list[asyncio.Task[None]] = []
        n = 0
        while n < total:
            at = start + (n // per_tick) * TICK
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            for _ in range(min(per_tick, total - n)):
                text = f"e{n}"
                due[text] = at
                writes.append(asyncio.create_task(write(text, f"ag{n % AGENTS}")))
                n += 1
        await asyncio.gather(*writes)
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
