"""The daemon's hook socket: framing, limits, failures, lifecycle; and the wire format."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.errors import ConfigError
from agentdeck.hooks.protocol import (
    HookReply,
    HookRequest,
    MalformedRequest,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
)
from agentdeck.hooks.socket_server import MAX_REQUEST, HookSocketServer
from tests.hooks.conftest import Recorder
from tests.hooks.payloads import SAMPLES
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

IO_DEADLINE = 10.0  # seconds any single exchange in these tests may take
PROMPT_CLOSE = 1.0  # close() with a connection open must return within this


async def exchange(path: Path, data: bytes, *, half_close: bool = True) -> bytes:
    """Send ``data`` (then EOF, with ``half_close``), return all the server
    says until it closes."""
    reader, writer = await open_unix(path)
    try:
        writer.write(data)
        if half_close:
            writer.write_eof()
        await writer.drain()
        async with asyncio.timeout(IO_DEADLINE):
            return await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()


async def open_unix(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if len(str(path).encode()) <= 107:
        return await asyncio.open_unix_connection(str(path))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # as the client does
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)
    return await asyncio.open_unix_connection(sock=sock)


async def ask(path: Path, request: HookRequest) -> HookReply:
    return decode_reply(await exchange(path, encode_request(request)))


@pytest.fixture
def sock_path(tmp_path: Path) -> Path:
    return tmp_path / "daemon.sock"


@pytest.fixture
async def server(sock_path: Path, recorder: Recorder) -> AsyncIterator[HookSocketServer]:
    server = HookSocketServer()
    await server.start(sock_path, recorder)
    try:
        yield server
    finally:
        await server.close()


# -- serving ----------------------------------------------------------------------


async def test_a_request_gets_the_handlers_reply(
    server: HookSocketServer, sock_path: Path, recorder: Recorder
) -> None:
    request = HookRequest(event=SAMPLES["PreToolUse"], env={"CLAUDE_PID": "42"})

    reply = await ask(sock_path, request)

    assert recorder.requests == [request]
    assert json.loads(reply.stdout) == {"event": request.event, "env": request.env}
    assert (reply.exit, reply.stderr, reply.fallback) == (0, "", False)


async def test_the_socket_is_private_to_its_owner(
    server: HookSocketServer, sock_path: Path
) -> None:
    mode = sock_path.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


async def test_a_path_longer_than_af_unix_allows(tmp_path: Path, recorder: Recorder) -> None:
    path = tmp_path / ("long-" * 25) / "daemon.sock"
    path.parent.mkdir()
    assert len(str(path).encode()) > 107
    server = HookSocketServer()
    await server.start(path, recorder)
    try:
        reply = await ask(path, HookRequest(event=SAMPLES["Stop"]))
        assert json.loads(reply.stdout)["event"] == SAMPLES["Stop"]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        await server.close()
    assert not path.exists()


async def test_a_stale_socket_file_is_replaced(sock_path: Path, recorder: Recorder) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_path))  # what a killed daemon leaves behind
    stale.close()
    server = HookSocketServer()
    await server.start(sock_path, recorder)
    try:
        reply = await ask(sock_path, HookRequest(event=SAMPLES["SessionEnd"]))
        assert json.loads(reply.stdout)["event"] == SAMPLES["SessionEnd"]
    finally:
        await server.close()
    assert not sock_path.exists()  # removed at close


async def test_a_file_that_is_not_a_socket_is_never_removed(
    sock_path: Path, recorder: Recorder
) -> None:
    sock_path.write_text("someone's notes")

    with pytest.raises(ConfigError, match="exists and is not a socket"):
        await HookSocketServer().start(sock_path, recorder)

    assert sock_path.read_text() == "someone's notes"


async def test_concurrent_requests_are_each_answered(
    server: HookSocketServer, sock_path: Path, recorder: Recorder
) -> None:
    gate = asyncio.Event()

    async def slow(request: HookRequest) -> HookReply:
        if request.event["n"] == 0:
            await gate.wait()  # the first waits until all others are answered
        return HookReply(stdout=str(request.event["n"]))

    await server.close()
    await server.start(sock_path, slow)

    async def one(n: int) -> str:
        reply = await ask(sock_path, HookRequest(event={"hook_event_name": "Stop", "n": n}))
        if n == 9:
            gate.set()
        return reply.stdout

    first = asyncio.create_task(one(0))
    rest = [await one(n) for n in range(1, 10)]
    assert rest == [str(n) for n in range(1, 10)]
    assert await first == "0"


# -- bad requests, failing handlers -------------------------------------------------


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"not json\n", "request is not JSON"),
        (b"[1]\n", "request is a JSON list, not an object"),
        (b'{"v":1,"env":{}}\n', 'request has no "event" object'),
        (b'{"v":1,"event":[],"env":{}}\n', 'request has no "event" object'),
        (b'{"v":1,"event":{},"env":{"A":1}}\n', '"env" is not an object of strings'),
        (b'{"v":2,"event":{}}\n', "protocol version 2"),
        (b"\xff\xfe\n", "request is not JSON"),
        (b'{"v":1,"event":' + b"[" * 50_000 + b"\n", "nested too deeply"),
        (b"\n", "request is not JSON"),
        (b"", "request is not JSON"),  # connected and closed without a word
    ],
)
async def test_a_malformed_request_gets_one_stderr_line(
    server: HookSocketServer, sock_path: Path, recorder: Recorder, line: bytes, says: str
) -> None:
    raw = await exchange(sock_path, line)

    reply = json.loads(raw)
    assert reply["exit"] == 0 and reply["stdout"] == ""
    assert reply["stderr"].startswith("agentdeck: ")
    assert says in reply["stderr"]
    assert "\n" not in reply["stderr"]
    assert recorder.requests == []


@pytest.mark.parametrize("size", [1_100_000, 2_000_000, 9_000_000])
async def test_an_oversize_request_falls_back_and_the_next_is_served(
    sock_path: Path, recorder: Recorder, size: int
) -> None:
    server = HookSocketServer(max_request=1024 * 1024)
    await server.start(sock_path, recorder)
    try:
        big = HookRequest(event={**SAMPLES["PostToolUse"], "tool_response": "x" * size})
        reply = decode_reply(await exchange_oversize(sock_path, encode_request(big)))
        assert reply.fallback
        assert reply.reason == "request larger than 1 MiB"

        small = HookRequest(event=SAMPLES["PostToolUse"])
        assert json.loads((await ask(sock_path, small)).stdout)["event"] == small.event
        assert recorder.requests == [small]
    finally:
        await server.close()


async def exchange_oversize(path: Path, data: bytes) -> bytes:
    """Send as much of ``data`` as the server takes, then read its answer (it
    answers and closes before reading everything)."""
    reader, writer = await open_unix(path)
    try:
        writer.write(data)
        with contextlib.suppress(ConnectionError):  # it stopped reading: its answer is coming
            await writer.drain()
        async with asyncio.timeout(IO_DEADLINE):
            return await reader.readline()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def test_the_default_request_limit_fits_tool_output() -> None:
    assert MAX_REQUEST == 64 * 1024 * 1024


async def test_a_handler_that_raises_gets_a_fallback_reply_and_is_logged(
    server: HookSocketServer,
    sock_path: Path,
    recorder: Recorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def crash(request: HookRequest) -> HookReply:
        raise KeyError("session")

    recorder.decide = crash

    with caplog.at_level(logging.ERROR, logger="agentdeck.hooks.socket_server"):
        reply = await ask(sock_path, HookRequest(event=SAMPLES["PreToolUse"]))

    assert reply == HookReply.fall_back("the daemon's hook handler failed: KeyError")
    [record] = caplog.records
    assert record.message == "hook handler failed on PreToolUse"
    assert record.exc_info is not None
    recorder.decide = lambda request: HookReply(stdout="still serving")
    assert (await ask(sock_path, HookRequest(event=SAMPLES["Stop"]))).stdout == "still serving"


async def test_a_request_that_never_comes_falls_back_at_the_read_deadline(
    sock_path: Path, recorder: Recorder
) -> None:
    server = HookSocketServer(read_deadline=0.2)
    await server.start(sock_path, recorder)
    try:
        reply = decode_reply(await exchange(sock_path, b'{"v":1,', half_close=False))
        assert reply == HookReply.fall_back("request not received within 0.2 s")
    finally:
        await server.close()


async def test_a_handler_stuck_past_its_deadline_falls_back(sock_path: Path) -> None:
    async def stuck(request: HookRequest) -> HookReply:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    server = HookSocketServer(handler_deadline=0.2)
    await server.start(sock_path, stuck)
    try:
        reply = await ask(sock_path, HookRequest(event=SAMPLES["PreToolUse"]))
        assert reply == HookReply.fall_back("no decision within 0.2 s")
    finally:
        await server.close()


async def test_past_the_connection_limit_a_request_is_told_busy(
    sock_path: Path, recorder: Recorder
) -> None:
    gate = asyncio.Event()

    async def slow(request: HookRequest) -> HookReply:
        await gate.wait()
        return HookReply(stdout="served")

    server = HookSocketServer(max_connections=1)
    await server.start(sock_path, slow)
    try:
        first = asyncio.create_task(ask(sock_path, HookRequest(event=SAMPLES["PreToolUse"])))
        await wait_for_connection(server)
        busy = await ask(sock_path, HookRequest(event=SAMPLES["PreToolUse"]))
        assert busy == HookReply.fall_back("the daemon is busy")
        gate.set()
        assert (await first).stdout == "served"
    finally:
        await server.close()


# -- closing ------------------------------------------------------------------------


async def test_close_with_a_silent_client_connected_returns_promptly(
    server: HookSocketServer, sock_path: Path
) -> None:
    reader, writer = await open_unix(sock_path)
    await wait_for_connection(server)

    started = time.monotonic()
    await server.close()

    assert time.monotonic() - started < PROMPT_CLOSE
    assert server.connections == 0
    assert not sock_path.exists()
    async with asyncio.timeout(IO_DEADLINE):
        assert await reader.read() == b""  # the client sees the connection end
    writer.close()
    await writer.wait_closed()


async def test_close_with_a_handler_still_deciding_returns_promptly(
    sock_path: Path,
) -> None:
    cancelled = asyncio.Event()

    async def forever(request: HookRequest) -> HookReply:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    server = HookSocketServer()
    await server.start(sock_path, forever)
    reader, writer = await open_unix(sock_path)
    writer.write(encode_request(HookRequest(event=SAMPLES["PreToolUse"])))
    await writer.drain()
    await wait_for_connection(server)

    started = time.monotonic()
    await server.close()

    assert time.monotonic() - started < PROMPT_CLOSE
    assert cancelled.is_set()
    writer.close()
    await writer.wait_closed()


async def wait_for_connection(server: HookSocketServer) -> None:
    async def connected() -> bool:
        return server.connections > 0

    await eventually(connected, timeout=IO_DEADLINE, what="the server to take the connection")


async def test_close_twice_and_start_twice(
    server: HookSocketServer, sock_path: Path, recorder: Recorder
) -> None:
    with pytest.raises(RuntimeError, match="already started"):
        await server.start(sock_path, recorder)
    await server.close()
    await server.close()
    assert not sock_path.exists()


# -- the wire format ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        HookReply(),
        HookReply(exit=2, stdout="é\n{}", stderr="line\nline"),
        HookReply.fall_back("the bridge is starting"),
    ],
)
def test_replies_are_one_line_and_round_trip(reply: HookReply) -> None:
    line = encode_reply(reply)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_reply(line) == reply


def test_requests_are_one_line_and_round_trip() -> None:
    request = HookRequest(event={**SAMPLES["PostToolUse"], "x": "a\nb\u2028"}, env={"K": "v"})
    line = encode_request(request)
    assert line.count(b"\n") == 1
    assert json.loads(line)["v"] == 1
    assert decode_request(line) == request
    assert request.name == "PostToolUse"
    assert HookRequest(event={"hook_event_name": 3}).name is None


@pytest.mark.parametrize(
    "line",
    [b'{"exit": "0"}', b'{"exit": 0, "stdout": 1}', b"[]", b"nope"],
)
def test_a_malformed_reply_is_a_value_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        decode_reply(line)


def test_a_missing_env_is_an_empty_one() -> None:
    request = decode_request(b'{"v":1,"event":{"hook_event_name":"Stop"}}')
    assert request.env == {}
    with pytest.raises(MalformedRequest):
        decode_request(b'{"v":1,"event":{},"env":[]}')
