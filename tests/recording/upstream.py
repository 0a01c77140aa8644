"""A model endpoint whose bytes the test knows exactly: a fixed SSE answer in chunks,
served by real uvicorn, remembering the headers and bodies it was sent."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn

CHUNKS = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":'
    b'{"type":"text_delta","text":"caf\xc3\xa9 ',
    b'\xe2\x98\x95 done"}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
)


@dataclass
class Upstream:
    """What it answers (``chunks``, ``status``), what it was sent (``seen``)."""

    chunks: tuple[bytes, ...] = CHUNKS
    status: int = 200
    headers: list[tuple[bytes, bytes]] = field(
        default_factory=lambda: [
            (b"content-type", b"text/event-stream"),
            (b"request-id", b"req_fixed"),
            (b"x-api-key-echo", b"sk-ant-api03-upstreamsecretvalue0000000000000000"),
            (b"set-cookie", b"session=abc"),
        ]
    )
    gap: float = 0.0  # seconds between chunks
    seen: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.seen.append(
            {
                "path": scope["path"],
                "query": scope["query_string"].decode(),
                "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
                "body": body,
            }
        )
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        for chunk in self.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if self.gap:
                await asyncio.sleep(self.gap)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        yield


@contextlib.asynccontextmanager
async def serving(app: Upstream) -> AsyncIterator[Upstream]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http="h11", lifespan="off", log_config=None, log_level="warning", access_log=False
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    app.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        yield app
    finally:
        server.should_exit = True
        async with asyncio.timeout(10):
            await task
