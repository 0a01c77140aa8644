"""A writer process for ``test_commit_order``: appends events to one PostgreSQL
store in batches, as a daemon or a runner host on another machine would. (What
happens without the store's write lock is shown by construction in the test
module itself: a transaction held before its commit.)"""

from __future__ import annotations

import asyncio
import time
from typing import Any


def write(url: str, worker: int, batches: int, per_batch: int, go: Any) -> None:
    from agentdeck.core.events import AssistantText
    from agentdeck.store import Store

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
