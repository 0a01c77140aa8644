"""The TUI's way to the daemon (``link.DeckLink``): the RemoteDeck of the daemon a
locator finds, built again when the daemon moves, and kept while it stays. Real
socket servers stand in for the daemon (each answers ``/api/stats``, as a daemon
does, with its own last event id)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from agentdeck.errors import DaemonUnavailable
from agentdeck.tui.link import DeckLink, Endpoint, FixedLocator
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


class Server:
    """A daemon stand-in on 127.0.0.1: every request is answered with ``answer``; with
    ``close_after_one`` each connection is closed after its first answer, without
    saying so (no ``Connection: close``), as uvicorn closes an idle kept-alive one."""

    def __init__(self, answer: dict[str, object], *, close_after_one: bool = False) -> None:
        self.body = json.dumps(answer).encode()
        self.close_after_one = close_after_one
        self.heads: list[bytes] = []  # each request's line and headers
        self.closed_by_client = 0  # connections the client closed
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def requests(self) -> list[bytes]:
        return [head.split(b"\r\n", 1)[0] for head in self.heads]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.closed_by_client += 1
                    return
                self.heads.append(head)
                length = next(
                    (int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                     if line.startswith(b"content-length:")),
                    0,
                )  # fmt: skip
                await reader.readexactly(length)
                status = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                writer.write(status + b"content-length: %d\r\n\r\n" % len(self.body) + self.body)
                await writer.drain()
                if self.close_after_one:
                    await reader.read(1)  # the next request on it, or its end: unanswered
                    return
        finally:
            writer.close()

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


class Moving:
    """A locator whose daemon moves when the test says (a restart on another port)."""

    where = "a test"

    def __init__(self, url: str, token: str) -> None:
        self.endpoint = Endpoint(url, token)

    def __call__(self) -> Endpoint:
        return self.endpoint


@pytest.fixture
async def link_closed() -> AsyncIterator[list[DeckLink]]:
    links: list[DeckLink] = []
    yield links
    for link in links:
        await link.aclose()


async def test_a_read_on_a_connection_closed_while_idle_is_asked_again(
    link_closed: list[DeckLink],
) -> None:
    async with Server({"last_event_id": 7}, close_after_one=True) as daemon:
        link = DeckLink(FixedLocator(daemon.url, "t"))
        link_closed.append(link)
        deck = await link.deck()
        assert await deck.last_event_id() == 7
        assert await deck.last_event_id() == 7  # the kept connection is gone: a new one
        assert len(daemon.requests) == 2
        with pytest.raises(DaemonUnavailable):  # a write is not sent twice
            await deck.interrupt("a1")
        assert len(daemon.requests) == 2  # it went to the closing connection only, never again


async def test_the_deck_is_kept_while_the_daemon_stays_and_built_again_when_it_moves(
    link_closed: list[DeckLink],
) -> None:
    async with Server({"last_event_id": 1}) as first, Server({"last_event_id": 2}) as second:
        where = Moving(first.url, "t1")
        link = DeckLink(where)
        link_closed.append(link)
        deck = await link.deck()
        assert await deck.last_event_id() == 1
        assert await link.deck() is deck  # the same daemon: the same deck, its connection

        where.endpoint = Endpoint(second.url, "t1")  # restarted on another port
        moved = await link.deck()
        assert moved is not deck and await moved.last_event_id() == 2
        where.endpoint = Endpoint(second.url, "t2")  # ... or with another token
        renewed = await link.deck()
        assert renewed is not moved and await renewed.last_event_id() == 2
        assert b"authorization: bearer t2" in second.heads[-1].lower()

        # The decks left behind are closed with the link, each connection with them.
        assert first.closed_by_client == 0
        await link.aclose()
        await eventually(lambda: _true(first.closed_by_client == 1), what="the first closed")
        await eventually(lambda: _true(second.closed_by_client == 2), what="the other two")


async def test_no_daemon_is_unavailable_with_the_way_to_start_one(tmp_path: object) -> None:
    from pathlib import Path

    from agentdeck.tui.link import HomeLocator

    link = DeckLink(HomeLocator(Path(str(tmp_path))))
    with pytest.raises(DaemonUnavailable, match="no agentdeck daemon is running") as raised:
        await link.deck()
    assert "agentdeck up -d" in (raised.value.hint or "")
    await link.aclose()


async def _true(value: object) -> object:
    return value
