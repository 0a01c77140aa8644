"""The real daemon (``agentdeck.serve.serve``) in the test's event loop:
home lock, ``daemon.json``, token, hook socket, web app and Deck, as
``agentdeck up`` runs them, so ``agentdeck`` subprocesses find and use it.

    async with serving(settings) as served:
        r = await served.api().get("/api/agents")
        served.deck ...                 # the Deck the daemon uses
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.serve import serve
from agentdeck.settings import Settings

START_DEADLINE_SECONDS = 60.0


@dataclass
class Served:
    deck: Deck
    info: DaemonInfo
    token: str

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.info.url,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=httpx.Timeout(60.0, connect=5.0),
        )


@contextlib.asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[Served]:
    """Serve until the block ends, then stop as SIGTERM would (agents mid-turn
    that resume on restart are suspended)."""
    ready: asyncio.Future[Served] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def on_ready(deck: Deck, info: DaemonInfo, token: str) -> None:
        ready.set_result(Served(deck, info, token))

    task = asyncio.create_task(serve(settings, on_ready=on_ready, stop=stop))
    try:
        async with asyncio.timeout(START_DEADLINE_SECONDS):
            done, _ = await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
            raise AssertionError("the daemon stopped during start-up")
        yield ready.result()
    finally:
        stop.set()
        await asyncio.wait({task}, timeout=START_DEADLINE_SECONDS)
        if not task.done():
            # Not left running into the event loop's teardown, where a task that
            # does not end when cancelled hangs the worker: cancelled, and said.
            task.cancel()
            await asyncio.wait({task}, timeout=10)
            raise AssertionError(f"the daemon did not stop within {START_DEADLINE_SECONDS:.0f} s")
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
