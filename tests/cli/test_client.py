"""The CLI's daemon client, at our own seam: an HTTP transport that plays a daemon."""

from __future__ import annotations

import json

import httpx
import pytest

from agentdeck.cli.client import DaemonClient
from agentdeck.daemon.home import DaemonInfo
from agentdeck.errors import AgentdeckError

pytestmark = pytest.mark.anyio


def sse(*frames: tuple[str | None, dict[str, object]]) -> bytes:
    out = []
    for kind, data in frames:
        head = f"event: {kind}\n" if kind else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def event(i: int) -> dict[str, object]:
    return {"id": i, "agent_id": "a1", "type": "notice", "ts": 1.0, "data": {"n": i}}


def client_with(handler: httpx.MockTransport) -> DaemonClient:
    client = DaemonClient(DaemonInfo(pid=1, host="127.0.0.1", port=9, started_at=0.0), "tok")
    client.http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=handler)
    return client


async def test_a_dropped_stream_resumes_from_its_position_without_gaps() -> None:
    asked: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        after = request.url.params["after"]
        asked.append(after)
        if after == "0":
            body = sse(("notice", event(3)), ("dropped", {"position": 5}))
        else:
            body = sse(("notice", event(6)))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    client = client_with(httpx.MockTransport(handle))
    try:
        got = [e.id async for e in client.stream(agent_id="a1", after=0)]
    finally:
        await client.aclose()
    assert got == [3, 6]
    assert asked == ["0", "5"]


async def test_error_bodies_become_clear_errors() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            409, json={"error": {"status": 409, "message": "agent x is done", "hint": "resume it"}}
        )

    client = client_with(httpx.MockTransport(handle))
    try:
        with pytest.raises(AgentdeckError) as info:
            await client.act("x", "interrupt")
    finally:
        await client.aclose()
    assert info.value.message == "agent x is done" and info.value.hint == "resume it"


async def test_a_dead_daemon_is_a_clear_error() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    client = client_with(httpx.MockTransport(handle))
    try:
        with pytest.raises(AgentdeckError, match="did not answer"):
            await client.healthz()
    finally:
        await client.aclose()
