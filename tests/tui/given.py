"""A deck given to the app (``DeckApp(GivenDeck(...))``) in place of a daemon's: for
the tests that hold the daemon's answers back (a slow daemon) without a daemon. The
Deck interface is the app's one way to the daemon, so it is the seam faked here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from agentdeck.errors import DaemonUnavailable
from agentdeck.tui.link import DeckLink
from tests.tui.test_snapshots import Nowhere


class Offline:
    """A deck whose daemon never answers the calls the app makes by itself (where the
    log ends, the live feed): the top line says reconnecting, as with no daemon. A
    test's subclass answers the calls it is about."""

    async def last_event_id(self) -> int:
        raise DaemonUnavailable("no daemon here (a test)")

    async def follow(self, *, after: int, **kw: object) -> AsyncIterator[list[StoredEvent]]:
        raise DaemonUnavailable("no daemon here (a test)")
        yield []  # an async generator, as the interface's


class GivenDeck(DeckLink):
    """A link to ``deck`` and nothing else."""

    def __init__(self, deck: Offline) -> None:
        super().__init__(Nowhere())
        self.given = deck

    async def deck(self) -> Deck:
        return cast(Deck, self.given)
