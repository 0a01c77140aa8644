"""A read on a kept-alive connection the daemon has closed (uvicorn closes idle ones
after 5 s) is asked again on a new connection, not reported as a dead daemon; a
write is not repeated. A real socket server that closes each connection after one
answer, without saying so (no ``Connection: close``)."""

from __future__ import annotations

import asyncio

import pytest

from agentdeck.errors import DaemonUnavailable
from agentdeck.tui.client import DeckClient, FixedLocator

pytestmark = pytest.mark.anyio


async def test_a_read_on_a_connection_closed_while_idle_is_asked_again() -> None:
    requests: list[bytes] = []

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        requests.append(head.split(b"\r\n", 1)[0])
        body = b'{"last_event_id": 7}'
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        await writer.drain()
        await reader.read(1)  # the next request on it, or its end: closed unanswered
        writer.close()

    server = await asyncio.start_server(answer_once, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = DeckClient(FixedLocator(f"http://127.0.0.1:{port}", "t"))
    try:
        assert await client.last_event_id() == 7
        assert await client.last_event_id() == 7  # the kept connection is gone: a new one
        assert len(requests) == 2
        with pytest.raises(DaemonUnavailable):  # a write is not sent twice
            await client.call("POST", "/api/agents/a1/interrupt")
        assert len(requests) == 2  # it went to the closing connection only, never again
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()
