"""What every command needs: settings, the store, a runner; one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from rich.console import Console

from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store

console = Console(highlight=False, soft_wrap=True)
console_err = Console(stderr=True, highlight=False, soft_wrap=True)
T = TypeVar("T")


def load_settings() -> Settings:
    settings = Settings()
    logging.getLogger("agentdeck").setLevel(settings.log_level.upper())
    logging.getLogger(__name__).info("settings: %s", settings.redacted())
    return settings


@contextlib.asynccontextmanager
async def opened(settings: Settings) -> AsyncIterator[tuple[Store, Runner]]:
    settings.ensure_home()
    store = Store.open(settings.db_path, batch_size=settings.event_batch_size)
    runner = Runner(store, settings)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


def run_async(fn: Callable[[Settings], Awaitable[T]]) -> T:
    settings = load_settings()
    return asyncio.run(_main(fn, settings))


async def _main(fn: Callable[[Settings], Awaitable[T]], settings: Settings) -> T:
    return await fn(settings)
