"""The two implementations of the Deck interface, one of each per test module.

``local``: the daemon's Deck in this process (the CLI's embedded mode), on its own
home. ``remote``: ``RemoteDeck`` over the HTTP API of a real daemon (``agentdeck
up`` in a subprocess) on another home. A test that takes ``deck`` runs once with
each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentdeck.client.deck import RemoteDeck
from agentdeck.core.deck import Deck
from agentdeck.daemon.compose import open_deck
from tests.conftest import make_settings
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module-wide: the decks below live across the module's tests, in one loop.
    return "asyncio"


@pytest.fixture(scope="module")
async def local_deck(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Deck]:
    deck = await open_deck(make_settings(tmp_path_factory.mktemp("local")))
    try:
        yield deck
    finally:
        await deck.close()


@pytest.fixture(scope="module")
async def remote_deck(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Deck]:
    daemon = await Daemon(deck_env(tmp_path_factory.mktemp("remote"))).start()
    try:
        async with RemoteDeck.connect(daemon.url, daemon.token, client="cli") as deck:
            yield deck
    finally:
        daemon.stop()


@pytest.fixture(params=["local", "remote"])
def deck(request: pytest.FixtureRequest) -> Deck:
    found: Deck = request.getfixturevalue(f"{request.param}_deck")
    return found
