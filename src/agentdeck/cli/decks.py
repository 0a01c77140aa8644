"""The one place the CLI chooses its Deck (``core.deck.Deck``).

When a daemon runs for this home, every command goes through it (``RemoteDeck``
over its API, with the home's token): one supervisor per home, never a second one
beside it. When none runs, the command opens the deck in this process (the
daemon's own ``Deck``, embedded: no API, no warm pool, no notifications) and closes
it on the way out, stopping what it started. A command is written once against
the interface and does not know which it got.

The read commands of the quick path (``ls``, ``show``, ``logs``, the inbox lists,
``queue``) are written against the same reads in wire form instead (``cli.wire``:
the daemon's JSON or a read-only look at the database, chosen in ``wire.wire()``):
building the core records costs a command ~35 ms of imports.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdeck.client.deck import RemoteDeck
    from agentdeck.core.deck import Deck
    from agentdeck.settings import Settings


@contextlib.asynccontextmanager
async def opened_deck(settings: Settings) -> AsyncIterator[Deck]:
    """The daemon's deck if one runs for ``settings.home_dir``, else one in this
    process, closed (its agents stopped, its log flushed) when the block ends."""
    from agentdeck.cli.client import connect

    client = await connect(settings)
    if client is not None:
        from agentdeck.client.deck import RemoteDeck

        async with RemoteDeck(client, owns_http=True) as remote:
            yield remote
        return
    from agentdeck.daemon.compose import open_deck

    local = await open_deck(settings, embedded=True)
    try:
        yield local
    finally:
        await local.close()


async def daemon_deck(settings: Settings) -> RemoteDeck:
    """The daemon's deck, for what only a running daemon can do (a hand-started
    session's orchestrator tools: what they start must outlive this process);
    ``DaemonUnavailable`` when none runs for this home. The caller closes it."""
    from agentdeck.cli.client import connect
    from agentdeck.client.deck import RemoteDeck
    from agentdeck.errors import DaemonUnavailable

    client = await connect(settings)
    if client is None:
        raise DaemonUnavailable(
            f"no agentdeck daemon is running for {settings.home_dir}",
            hint="start it with `agentdeck up --detach`",
        )
    return RemoteDeck(client, owns_http=True)


def is_remote(deck: Deck) -> bool:
    """Whether ``deck`` is a daemon's (what is started through it outlives this
    process) rather than this process's own."""
    from agentdeck.client.deck import RemoteDeck

    return isinstance(deck, RemoteDeck)
