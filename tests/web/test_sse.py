"""The SSE stream against a real uvicorn server: format, resume, heartbeats,
slow clients, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from agentdeck.core.events import AssistantText, StoredEvent
from agentdeck.settings import Settings
from agentdeck.web.sse import event_streams
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon, running_daemon
from tests.web.sseclient import Message, messages, stream_request

pytestmark = pytest.mark.anyio

PRODUCER_PACE = 0.005


async def append(daemon: RunningDaemon, n: int, agent: str = "agent1", size: int = 0) -> list[int]:
    pad = "x" * size
    events = [
        AssistantText(agent_id=agent, ts=time.time(), text=f"line {i} {pad}") for i in range(n)
    ]
    return [e.id for e in await daemon.deck._store.append(events)]


async def read_events(
    stream: AsyncIterator[Message], *, until: int, timeout: float = 10.0
) -> list[Message]:
    """Event messages (no comments) until one with id ``until``."""
    out: list[Message] = []
    async with asyncio.timeout(timeout):
        async for msg in stream:
            if msg.comment is None and msg.id is not None:
                out.append(msg)
                if int(msg.id) >= until:
                    return out
    raise AssertionError(f"the stream ended before event {until}")


async def test_events_carry_id_type_and_stored_json(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    ids = await append(daemon, 5)
    async with stream_request(api, {"after": 0}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = messages(response)
        first = await anext(stream)
        assert first.retry is not None and first.retry > 0
        got = await read_events(stream, until=ids[-1])
    log = await daemon.deck._store.read(limit=100)
    assert [int(m.id or 0) for m in got] == ids
    for msg, event in zip(got, log, strict=True):
        assert msg.event == event.type == "assistant_text"
        assert msg.json() == event.to_dict()


async def test_default_is_live_only_and_agent_filter(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    await append(daemon, 3)
    async with stream_request(api) as live, stream_request(api, {"after": 0}) as mine:
        # (an agent filter needs a known agent; "agent" filters the events of all)
        await append(daemon, 2, agent="other")
        new = await append(daemon, 2)
        got = await read_events(messages(live), until=new[-1])
        assert [int(m.id or 0) for m in got] == [new[0] - 2, new[0] - 1, *new]
        assert [m.json()["agent_id"] for m in got] == ["other", "other", "agent1", "agent1"]
        assert int((await read_events(messages(mine), until=1))[0].id or 0) == 1


async def test_resume_with_last_event_id_has_no_gap_and_no_duplicate(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    """Drop the connection mid-stream while events keep coming; reconnect."""
    await append(daemon, 20)
    received: list[int] = []
    producing = asyncio.Event()

    async def produce() -> None:
        for _ in range(40):
            await append(daemon, 5)
            producing.set()
            await asyncio.sleep(PRODUCER_PACE)  # a steady trickle, not a wait

    async with asyncio.TaskGroup() as tg:
        async with stream_request(api, {"after": 0}) as response:
            tg.create_task(produce())
            await producing.wait()
            # Read part of the flow, then hang up in the middle of it.
            async for msg in messages(response):
                if msg.id is not None:
                    received.append(int(msg.id))
                    if len(received) == 60:
                        break
        # The header wins over ?after=.
        async with stream_request(api, {"after": 0}, last_event_id=str(received[-1])) as again:
            last = 20 + 40 * 5
            received += [int(m.id or 0) for m in await read_events(messages(again), until=last)]
    log = [e.id for e in await daemon.deck._store.read(limit=10_000)]
    assert received == log


async def test_heartbeats_keep_a_quiet_stream_alive(api: httpx.AsyncClient) -> None:
    pings = 0
    async with stream_request(api) as response:
        async with asyncio.timeout(10):
            async for msg in messages(response):
                if msg.comment == "ping":
                    pings += 1
                    if pings == 3:
                        break
    assert pings == 3


async def test_a_bad_last_event_id_is_422(api: httpx.AsyncClient) -> None:
    r = await api.get("/api/events/stream", headers={"Last-Event-ID": "soon"})
    assert r.status_code == 422
    assert "last-event-id" in r.json()["error"]["message"]


async def _slow_client(url: str, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream request from a client that then reads nothing: a tiny receive
    buffer, and nothing takes data off the socket until the test says so."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    writer.write(
        f"GET /api/events/stream?after=0 HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode()
    )
    await writer.drain()
    return reader, writer


async def test_a_slow_client_is_dropped_without_slowing_the_others(settings: Settings) -> None:
    def small_queues(deck: object) -> None:
        deck._hub.max_batches = 4  # type: ignore[attr-defined]

    async with running_daemon(settings, configure=small_queues) as daemon:
        reader, writer = await _slow_client(daemon.url, daemon.token)
        streams = event_streams(daemon.app.state)
        await eventually(lambda: _true(daemon.deck._hub.subscriber_count == 1), what="slow sub")
        async with daemon.client() as api, stream_request(api) as normal:
            fast = messages(normal)
            # 100 commits of 128 KiB: far more than the slow client's socket buffers
            # and its queue of 4 batches hold.
            slowest_append = 0.0
            for _ in range(100):
                started = time.monotonic()
                [last] = await append(daemon, 1, size=128 * 1024)
                slowest_append = max(slowest_append, time.monotonic() - started)
                # The normal client has each event promptly.
                got = await read_events(fast, until=last, timeout=5)
                assert int(got[-1].id or 0) == last
            assert slowest_append < 2.0

            # Now the slow client reads: what it got, then `dropped` and the end.
            async with asyncio.timeout(30):
                raw = await reader.read(-1)
            writer.close()
            body = _dechunk(raw.split(b"\r\n\r\n", 1)[1]).decode()
            ids = [int(line[4:]) for line in body.splitlines() if line.startswith("id: ")]
            assert ids == list(range(1, len(ids) + 1)) and len(ids) < last
            final = body.rstrip("\n").rsplit("\n\n", 1)[-1]
            assert final.startswith("event: dropped\ndata: ")
            position = json.loads(final.split("data: ", 1)[1])["position"]
            assert position == ids[-1]
            assert streams.dropped == 1

            # It resumes from there without a gap.
            async with stream_request(api, last_event_id=str(position)) as resumed:
                rest = await read_events(messages(resumed), until=last)
            assert [int(m.id or 0) for m in rest] == list(range(position + 1, last + 1))


def _dechunk(data: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response."""
    out = bytearray()
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]


async def _true(value: bool) -> bool:
    return value


async def test_streams_end_cleanly_when_the_server_shuts_down(settings: Settings) -> None:
    async with running_daemon(settings) as daemon:
        client = daemon.client()
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(client)
        response = await stack.enter_async_context(stream_request(client))
        stream = messages(response)
        await anext(stream)  # retry:
    # The daemon is gone; the stream ended without an error.
    rest: list[StoredEvent | Message] = []
    async with asyncio.timeout(5):
        rest = [m async for m in stream if m.comment is None]
    assert rest == []
    await stack.aclose()
