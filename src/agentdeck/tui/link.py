"""Where the TUI's deck is: the daemon a ``Locator`` finds, as a ``RemoteDeck``.

A locator is the home's ``daemon.json`` and token (read again at each call, so a
daemon restarted on a new port or with a new token is found), or a fixed ``--url``
and token for a remote one. ``DeckLink`` turns what it finds into the Deck the app
works with (``core.deck.Deck``), built again when the daemon has moved. No UI here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agentdeck.client import locate
from agentdeck.client.deck import RemoteDeck
from agentdeck.core.deck import Deck
from agentdeck.errors import DaemonUnavailable, UsageError


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str


class Locator(Protocol):
    """Where the daemon is now; raises DaemonUnavailable when none runs."""

    def __call__(self) -> Endpoint: ...

    @property
    def where(self) -> str: ...


class HomeLocator:
    """The daemon of a home: ``daemon.json`` and ``token``, read at every call."""

    def __init__(self, home_dir: Path) -> None:
        self.home_dir = home_dir

    @property
    def where(self) -> str:
        return str(self.home_dir)

    def running(self) -> bool:
        return locate.find(self.home_dir) is not None

    def __call__(self) -> Endpoint:
        found = locate.find(self.home_dir)
        if found is None:
            raise DaemonUnavailable(
                f"no agentdeck daemon is running for {self.home_dir}",
                hint="start one with `agentdeck up -d`, or pass --url and --token",
            )
        info, token = found
        if token is None:
            raise DaemonUnavailable(
                f"a daemon runs for {self.home_dir} but its token is missing",
                hint="restart it: `agentdeck down && agentdeck up -d`",
            )
        return Endpoint(info.url, token)


class FixedLocator:
    """A daemon given by address (``--url``, ``--token``)."""

    def __init__(self, url: str, token: str) -> None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--url must be an http(s) URL, not {url!r}")
        if not token:
            raise UsageError("--url needs --token (the token file of the daemon's home)")
        self.endpoint = Endpoint(url.rstrip("/"), token)

    @property
    def where(self) -> str:
        return self.endpoint.url

    def __call__(self) -> Endpoint:
        return self.endpoint


class DeckLink:
    """The deck of the daemon ``locator`` finds. ``deck()`` asks the locator each
    time (a file read) and gives the same ``RemoteDeck`` while the daemon stays
    where it was; a new address or token is a new one.

    A deck left behind is closed with the link, not at once: a worker may be half-way
    through a call on it (its daemon is gone, so the call fails as unavailable; a
    closed client would fail it as a programming error instead). Only a daemon that
    moved leaves one behind, so they are few."""

    def __init__(self, locator: Locator) -> None:
        self.locator = locator
        self._endpoint: Endpoint | None = None
        self._deck: RemoteDeck | None = None
        self._left: list[RemoteDeck] = []

    @property
    def where(self) -> str:
        return self.locator.where

    async def deck(self) -> Deck:
        """The daemon's deck (``DaemonUnavailable`` when none runs)."""
        endpoint = self.locator()
        if self._deck is None or endpoint != self._endpoint:
            if self._deck is not None:
                self._left.append(self._deck)
            self._endpoint = endpoint
            self._deck = RemoteDeck.connect(endpoint.url, endpoint.token, client="tui")
        return self._deck

    async def aclose(self) -> None:
        decks, self._left = [*self._left, self._deck], []
        self._deck = self._endpoint = None
        for deck in decks:
            if deck is not None:
                await deck.aclose()
