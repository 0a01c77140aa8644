"""The daemon serves whatever app it is handed (``Mount``): it knows nothing of the
web layer, which ``agentdeck.serve`` mounts on it. Its open responses are ended
at shutdown through the mount's ``close_streams``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import DaemonInfo
from agentdeck.daemon.server import Mounted, serve
from agentdeck.settings import Settings
from tests.conftest import make_settings

pytestmark = pytest.mark.anyio

DEADLINE_SECONDS = 60.0


async def test_the_daemon_serves_the_app_it_is_handed_and_closes_its_streams(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, port=0)
    closed = asyncio.Event()
    mounted_on: list[Deck] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"mounted"})

    def mount(deck: Deck, *, token: str, settings: Settings) -> Mounted:
        mounted_on.append(deck)
        return Mounted(app=app, close_streams=closed.set)

    stop = asyncio.Event()
    answered: list[str] = []

    async def on_ready(deck: Deck, info: DaemonInfo, token: str) -> None:
        async with httpx.AsyncClient(base_url=info.url, timeout=10) as client:
            answered.append((await client.get("/anything")).text)
        assert mounted_on == [deck]
        assert not closed.is_set()  # not before the daemon stops
        stop.set()

    async with asyncio.timeout(DEADLINE_SECONDS):
        await serve(settings, mount, on_ready=on_ready, stop=stop)
    assert answered == ["mounted"]
    assert closed.is_set()
