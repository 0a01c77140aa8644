"""The recording proxy's ASGI application: forward, stream back, write the cassette.

``/r/<route token>/<rest>`` goes to the route's upstream as ``<upstream><rest>``
with the request's headers as they came (the agent's credentials untouched, only
hop-by-hop headers dropped and ``accept-encoding: identity`` asked, so what is
kept can be scrubbed). The answer goes back chunk by chunk as the upstream sends
it, never buffered whole. An unknown token is a 404 and nothing is forwarded.

What the agent sees is what the upstream did: its status and headers, its bytes;
a timeout of the upstream before any answer is a 504; an upstream that breaks the
stream breaks the agent's (the connection is dropped, not ended cleanly).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from agentdeck.runner.recording.cassette import CassetteWriter

logger = logging.getLogger(__name__)

PREFIX = "/r/"
# Never forwarded either way: they are about one hop, not the exchange.
_HOP = frozenset((
    "host", "connection", "keep-alive", "proxy-connection", "te", "trailer",
    "transfer-encoding", "upgrade", "accept-encoding", "content-length",
))  # fmt: skip
_HOP_BACK = frozenset(("connection", "keep-alive", "transfer-encoding", "trailer", "upgrade"))
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a request body past this is refused (413)
START_WAIT = 30.0  # the longest a first request waits for its agent's start state

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class DropConnection(Exception):
    """Raised after the response started: uvicorn then closes the socket mid-stream."""


class DropConnectionFilter(logging.Filter):
    """Keeps uvicorn from logging the proxy's deliberate disconnects as errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, DropConnection)


@dataclass
class Route:
    """One agent's way through the proxy; ``ready`` once its start state is kept;
    ``client``: the HTTP client for its upstream (made off the agent's start)."""

    agent_id: str
    upstream: str
    writer: CassetteWriter
    client: Awaitable[httpx.AsyncClient]
    ready: asyncio.Event = field(default_factory=asyncio.Event)


class ProxyApp:
    """Raw ASGI: the proxy must see each chunk as it comes and drop a connection."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        token, _, rest = path.removeprefix(PREFIX).partition("/")
        route = self.routes.get(token) if path.startswith(PREFIX) else None
        if route is None:
            await _plain(send, 404, "no such recording route")
            return
        body = await _body(receive)
        if body is None:
            await _plain(send, 413, "request body too large for the recording proxy")
            return
        if not route.ready.is_set():  # the start state first: nothing has changed yet
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(route.ready.wait(), START_WAIT)
        rest = "/" + rest
        query = scope.get("query_string", b"").decode("latin-1")
        target = route.upstream.rstrip("/") + rest + (f"?{query}" if query else "")
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        n = route.writer.request(scope["method"], rest, raw, body)
        headers = [(k, v) for k, v in raw if k.lower() not in _HOP]
        headers.append(("accept-encoding", "identity"))
        try:
            client = await route.client
        except Exception as exc:  # noqa: BLE001 - said to the agent and in the cassette
            route.writer.end(n, "upstream_error", 0.0, f"proxy client: {exc!r}")
            await _plain(send, 502, "the recording proxy could not reach the model endpoint")
            return
        request = client.build_request(scope["method"], target, headers=headers, content=body)
        exchange = _Exchange(route.writer, n, send)
        forward = asyncio.create_task(exchange.forward(client, request))
        gone = asyncio.create_task(_disconnected(receive))
        try:
            await asyncio.wait((forward, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not forward.done():  # the agent went away: so does the upstream request
                forward.cancel()
                route.writer.end(n, "client_gone", exchange.elapsed(), "the agent hung up")
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gone
        with contextlib.suppress(asyncio.CancelledError):
            await forward  # its DropConnection reaches uvicorn


class _Exchange:
    def __init__(self, writer: CassetteWriter, n: int, send: Send) -> None:
        self.writer = writer
        self.n = n
        self.send = send
        self.began = time.monotonic()
        self.started = False

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 6)

    async def forward(self, client: httpx.AsyncClient, request: httpx.Request) -> None:
        try:
            response = await client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            self.writer.end(self.n, "timeout", self.elapsed(), f"upstream: {type(exc).__name__}")
            await _plain(self.send, 504, "the model endpoint did not answer in time")
            return
        except httpx.HTTPError as exc:
            self.writer.end(self.n, "upstream_error", self.elapsed(), f"upstream: {exc!r}")
            await _plain(self.send, 502, "the model endpoint could not be reached")
            return
        try:
            raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw]
            self.writer.response(self.n, response.status_code, raw)
            back = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in raw]
            await self.send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in back if k.lower().decode() not in _HOP_BACK],
                }
            )
            self.started = True
            async for chunk in response.aiter_raw():
                self.writer.chunk(self.n, self.elapsed(), chunk)
                await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
            self.writer.end(self.n, "complete", self.elapsed())
        except httpx.HTTPError as exc:
            kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "upstream_error"
            self.writer.end(self.n, kind, self.elapsed(), f"upstream: {type(exc).__name__}")
            raise DropConnection(kind) from exc
        finally:
            await response.aclose()


async def _body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _plain(send: Send, status: int, message: str) -> None:
    body = json.dumps({"type": "error", "error": {"type": "proxy_error", "message": message}})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})
