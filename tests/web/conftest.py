"""A real daemon app for web tests: a Deck on a tmp home behind a real uvicorn
server on 127.0.0.1 (ephemeral port), in the test's own event loop.

    async def test_x(daemon: RunningDaemon, api: httpx.AsyncClient) -> None:
        r = await api.get("/api/agents")          # authenticated
        daemon.deck._store ...                     # the same Deck the app uses
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.home import ensure_token
from agentdeck.settings import Settings
from agentdeck.web.app import create_app
from agentdeck.web.sse import close_streams

HEARTBEAT_SECONDS = 0.3  # SSE heartbeats in tests: fast, so tests can wait for them

POLL_INTERVAL = 0.01  # polling under a deadline


@dataclass
class RunningDaemon:
    url: str
    token: str
    deck: Deck
    settings: Settings
    app: FastAPI
    port: int

    @property
    def host(self) -> str:
        """The Host header a same-origin request carries."""
        return f"127.0.0.1:{self.port}"

    def client(self, *, token: str | None = None, **kwargs: object) -> httpx.AsyncClient:
        """An HTTP client for this daemon, authenticated with ``token`` (default:
        the daemon's; pass ``""`` for none)."""
        token = self.token if token is None else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(30.0, connect=5.0),
            **kwargs,  # type: ignore[arg-type]
        )


class _Server(uvicorn.Server):
    """uvicorn that leaves the test process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def running_daemon(
    settings: Settings, *, configure: Callable[[Deck], None] | None = None
) -> AsyncIterator[RunningDaemon]:
    """Open a Deck on ``settings.home``, serve ``create_app`` on it; shut all down
    after (streams ended, server stopped, agents stopped, log flushed)."""
    deck = await open_deck(settings)
    try:
        if configure is not None:
            configure(deck)
        token = ensure_token(settings)
        app = create_app(deck, token=token, settings=settings)
        app.state.sse_heartbeat = HEARTBEAT_SECONDS
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        # log_config=None: no global logging setup; access lines reach caplog.
        config = uvicorn.Config(app, log_config=None, lifespan="off", timeout_graceful_shutdown=5)
        server = _Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]), name="test-uvicorn")
        try:
            async with asyncio.timeout(20):
                while not server.started:
                    if task.done():
                        await task
                        raise AssertionError("uvicorn stopped during start-up")
                    await asyncio.sleep(POLL_INTERVAL)
            yield RunningDaemon(
                url=f"http://127.0.0.1:{port}",
                token=token,
                deck=deck,
                settings=settings,
                app=app,
                port=port,
            )
        finally:
            close_streams(app.state)
            server.should_exit = True
            async with asyncio.timeout(20):
                await task
            sock.close()
    finally:
        await deck.close()


@pytest.fixture
async def daemon(settings: Settings) -> AsyncIterator[RunningDaemon]:
    """A real daemon app (Deck + uvicorn) on a fresh home."""
    async with running_daemon(settings) as running:
        yield running


@pytest.fixture
async def api(daemon: RunningDaemon) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client authenticated with the daemon's token."""
    async with daemon.client() as client:
        yield client
