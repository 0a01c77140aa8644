"""Store ingest throughput: persisted events per second.

    .venv/bin/python benchmarks/store_ingest.py [--events 100000] [--tasks 50]

Appends ``--events`` events from ``--tasks`` concurrent asyncio tasks, in
chunks of 1 and of 20 events per ``append`` call, each into a fresh SQLite file,
and prints events/s (wall clock from the first append to the last commit).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agentdeck.core.events import AssistantText, Event
from agentdeck.store import Store


async def _ingest(db: Path, *, total: int, tasks: int, chunk: int, batch_size: int) -> float:
    store = Store.open(db, batch_size=batch_size)
    per_task = total // tasks
    now = time.time()

    async def worker(n: int) -> None:
        agent_id = f"bench{n:04d}"
        events: list[Event] = [
            AssistantText(agent_id=agent_id, ts=now, text=f"chunk of assistant output #{i}")
            for i in range(per_task)
        ]
        for start in range(0, per_task, chunk):
            await store.append(events[start : start + chunk])

    try:
        started = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for n in range(tasks):
                tg.create_task(worker(n))
        elapsed = time.perf_counter() - started
        stored = await store.last_event_id()
        assert stored == per_task * tasks, (stored, per_task * tasks)
        assert store.integrity_check() == "ok"
    finally:
        await store.close()
    return per_task * tasks / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    print(
        f"store ingest: {args.events} events, {args.tasks} concurrent tasks, "
        f"batch_size={args.batch_size}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for chunk in (1, 20):
            rate = asyncio.run(
                _ingest(
                    Path(tmp) / f"chunk{chunk}.db",
                    total=args.events,
                    tasks=args.tasks,
                    chunk=chunk,
                    batch_size=args.batch_size,
                )
            )
            print(f"  chunks of {chunk:>2}: {rate:>10,.0f} events/s")


if __name__ == "__main__":
    main()
