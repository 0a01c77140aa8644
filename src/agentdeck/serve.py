"""The composition that mounts the web layer on the daemon: ``agentdeck up``.

It sits above both: the daemon (``agentdeck.daemon.server``) serves whatever app
it is handed and knows nothing of the web; the web layer (``agentdeck.web``)
builds its app on a Deck and knows nothing of how it is served.
"""

from __future__ import annotations

import asyncio

from agentdeck.core.deck import Deck as DeckInterface
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.server import Mounted, Ready
from agentdeck.daemon.server import serve as serve_daemon
from agentdeck.settings import Settings


def mount_web(deck: Deck, *, token: str, settings: Settings) -> Mounted:
    """The web app (API, event stream, dashboard) on ``deck``."""
    from agentdeck.web.app import create_app
    from agentdeck.web.sse import close_streams

    app = create_app(deck, token=token, settings=settings)
    return Mounted(app=app, close_streams=lambda: close_streams(app.state))


async def serve(
    settings: Settings,
    *,
    on_ready: Ready | None = None,
    stop: asyncio.Event | None = None,
    runner: bool = True,
) -> None:
    """Run the daemon with the web app until ``stop`` is set (or a stop signal);
    ``runner`` False: on a shared deck, no agents run here (``up --no-runner``)."""
    await serve_daemon(settings, mount_web, on_ready=on_ready, stop=stop, runner=runner)


def _is_a_deck(deck: Deck) -> DeckInterface:
    """mypy proves the daemon's Deck, in-process, implements the Deck interface."""
    return deck
