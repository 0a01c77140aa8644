"""The CLI's asynchronous way to a running daemon: ``agentdeck.client.http`` with
the home's token, checked to answer. ``cli.decks`` builds the RemoteDeck on it (the
quick path takes ``agentdeck.client.quick`` instead).

``connect(settings)`` finds the daemon of this home, or returns None when there
is none (then the deck opens embedded). A daemon that holds the home but does not
answer is an error, not a reason to run a second supervisor beside it.
"""

from __future__ import annotations

from typing import Any

from agentdeck.client import quick
from agentdeck.client.http import DaemonHTTP
from agentdeck.daemon.home import DaemonInfo
from agentdeck.settings import Settings


class DaemonClient(DaemonHTTP):
    def __init__(self, info: DaemonInfo, token: str) -> None:
        super().__init__(info.url, token, client="cli")
        self.info = info

    async def healthz(self) -> dict[str, Any]:
        # Short: a daemon that cannot answer this quickly is hung.
        data: dict[str, Any] = await self.call("GET", "/healthz", timeout=5.0)
        return data


async def connect(settings: Settings) -> DaemonClient | None:
    """The daemon of this home, or None if none runs; checked to answer."""
    found = quick.connect(settings.home_dir)
    if found is None:
        return None
    assert isinstance(found.info, DaemonInfo)  # a home's daemon, not one by URL
    client = DaemonClient(found.info, found.token)
    try:
        await client.healthz()
    except BaseException:
        await client.aclose()
        raise
    return client
