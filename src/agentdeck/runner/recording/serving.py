"""An ASGI app served by uvicorn in this event loop on a free 127.0.0.1 port: the
recording proxy's and the replay server's (one way to start and stop both)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import uvicorn

STOP_TIMEOUT = 5.0


class _Server(uvicorn.Server):
    """uvicorn in the runner's loop, leaving the process's signal handlers alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


class LoopbackServer:
    def __init__(self, app: Any, name: str) -> None:
        self.app = app
        self.name = name
        self.port: int | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> int:
        """Listen now; the port."""
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY on the connections it accepts
        # only then (with proto 0, each chunk after the headers waited ~40 ms for the
        # agent's delayed ACK: Nagle).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        self.port = port
        config = uvicorn.Config(
            self.app,
            http="h11",
            ws="none",  # plain HTTP only: no websocket protocol loaded
            lifespan="off",
            # No X-Forwarded-* rewriting: the client is the agent, on 127.0.0.1, which
            # uvicorn would otherwise trust to say where it came from.
            proxy_headers=False,
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = server = _Server(config)
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name=self.name)
        return port

    @property
    def uvicorn_server(self) -> uvicorn.Server | None:
        """uvicorn's own server while it serves (its connections: tests)."""
        return self._server

    async def stop(self) -> None:
        server, task = self._server, self._task
        self._server = self._task = None
        self.port = None
        if server is None or task is None:
            return
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
