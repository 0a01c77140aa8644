"""``agentdeck runner``: a process that runs agents of a shared deck and nothing
else — no API, no dashboard, no hook socket, no notifications (the API nodes
send those). It takes its home's lock (one process per home), opens the deck on
the shared database, serves as a runner host until a stop signal, then stops
its agents and hands those it suspended on to other hosts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.home import DaemonLock
from agentdeck.daemon.server import _signal_event
from agentdeck.errors import UsageError
from agentdeck.runner.hosting import RunnerHost
from agentdeck.settings import Settings

logger = logging.getLogger(__name__)


async def serve_runner(
    settings: Settings,
    *,
    name: str | None = None,
    capacity: int | None = None,
    labels: list[str] | None = None,
    project_roots: list[str] | None = None,
    on_ready: Callable[[RunnerHost], Awaitable[None]] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    if settings.database_url is None:
        raise UsageError(
            "a runner host serves a shared deck: give its PostgreSQL database "
            "(--database URL or AGENTDECK_DATABASE_URL)",
            hint="docs/deploy.md sets one up",
        )
    settings.ensure_home()
    lock = DaemonLock(settings)
    lock.acquire()
    try:
        stopping = stop or _signal_event()
        deck = await open_deck(settings, notify=False)
        try:
            host = deck.host_of_settings(
                name=name, capacity=capacity, labels=labels, project_roots=project_roots
            )
            serving = await deck.serve_as_host(host)
            if on_ready is not None:
                await on_ready(serving)
            await stopping.wait()
            logger.warning("runner host %s stopping", host.name)
        finally:
            await deck.close()
    finally:
        lock.release()
