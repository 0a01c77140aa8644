"""A writer process for ``test_commit_order``: appends events to one PostgreSQL
store in batches, as a daemon or a runner host on another machine would.

``lock=False`` takes the store's advisory write lock away and ``stall`` holds each
transaction open between its insert and its commit (both in this process only,
for the test): with the lock gone that is the window in which a later id commits
before an earlier one, which a follower reading ``id > last`` skips for good.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any


def write(
    url: str, worker: int, batches: int, per_batch: int, lock: bool, stall: float, go: Any
) -> None:
    from agentdeck.core.events import AssistantText
    from agentdeck.store import Store, dialect_postgres, writer, writes

    if not lock:
        dialect_postgres.take_write_lock = lambda conn: None  # type: ignore[assignment]
    if stall:

        def slow_insert(conn: Any, rows: Any) -> list[int]:
            ids = writes.insert_events(conn, rows)
            time.sleep(random.uniform(0, stall))  # the fault injected, not a wait
            return ids

        writer.insert_events = slow_insert  # type: ignore[assignment]

    async def main() -> None:
        async with Store.open(url) as store:
            go.wait(60)
            for b in range(batches):
                await store.append(
                    [
                        AssistantText(agent_id=f"w{worker}", ts=time.time(), text=f"{b}.{i}")
                        for i in range(per_batch)
                    ]
                )

    asyncio.run(main())
