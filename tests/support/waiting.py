"""Wait on conditions with deadlines; never sleep blindly in a test."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agentdeck.core.events import StoredEvent
from agentdeck.store.store import Store

T = TypeVar("T")
POLL_INTERVAL = 0.05


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float = 30.0, what: str = "condition"
) -> T:
    """Poll ``probe`` until it returns something truthy, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(POLL_INTERVAL)


async def wait_event(
    store: Store,
    agent_id: str,
    type_: str,
    *,
    timeout: float = 30.0,
    where: Callable[[StoredEvent], bool] = lambda e: True,
) -> StoredEvent:
    async def probe() -> StoredEvent | None:
        for event in await store.read(agent_id=agent_id, limit=100_000):
            if event.type == type_ and where(event):
                return event
        return None

    return await eventually(probe, timeout=timeout, what=f"{type_} event of {agent_id}")
