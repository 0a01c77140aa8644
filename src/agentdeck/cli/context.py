"""What every command needs: settings, logging, one event loop (and the store alone
for the few that read it directly; the others open a Deck: ``cli.decks``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from agentdeck.cli import out
from agentdeck.settings import Settings

if TYPE_CHECKING:  # SQLAlchemy loads only when a command needs it
    from agentdeck.store.store import Store

console = out.console()
console_err = out.console_err()
T = TypeVar("T")


def configure_logging() -> None:
    """Warnings and errors to stderr, as every command has them."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # The SDK logs a process that we stopped on purpose as a "fatal error"; every
    # real failure reaches the user as the agent's own error event instead.
    logging.getLogger("claude_agent_sdk").setLevel(logging.CRITICAL)


def load_settings() -> Settings:
    settings = Settings.load()
    logging.getLogger("agentdeck").setLevel(settings.log_level.upper())
    logging.getLogger(__name__).info("settings: %s", settings.redacted())
    return settings


@contextlib.asynccontextmanager
async def opened_store(settings: Settings) -> AsyncIterator[Store]:
    """The store alone, for commands that only read (no SDK import)."""
    from agentdeck.store.store import Store

    settings.ensure_home()
    store = Store.open(settings.database, batch_size=settings.event_batch_size)
    try:
        yield store
    finally:
        await store.close()


# Set by a command that closed everything it opened (the store flushed and closed,
# every process it started reaped): ``app.main`` then ends the process at once.
_quick_exit = False


def end_quickly() -> None:
    """Let this process end without the interpreter's teardown, which walks and
    frees every object the SDK's imports made (~0.1 s even after ``gc.freeze``;
    see ``exit_now``). Only once nothing is left to flush but stdio."""
    global _quick_exit
    _quick_exit = True


def exit_now(code: object) -> None:
    """When ``end_quickly`` was asked for: stdio and logging flushed, then
    ``os._exit`` with the exit status ``sys.exit(code)`` would give. Else returns."""
    if not _quick_exit or not (code is None or isinstance(code, int)):
        return
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        return  # the ordinary exit reports it as it always did
    logging.shutdown()
    os._exit(code or 0)


def run_async(fn: Callable[[Settings], Awaitable[T]]) -> T:
    settings = load_settings()
    return asyncio.run(_main(fn, settings))


async def _main(fn: Callable[[Settings], Awaitable[T]], settings: Settings) -> T:
    return await fn(settings)
