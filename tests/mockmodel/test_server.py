"""The real server over real HTTP (httpx): replies, faults, recording, lifecycle."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from agentdeck.errors import NotFound
from agentdeck.mockmodel import MockModel, Scenario, parse_scenario
from agentdeck.mockmodel.encoding import FALLBACK_TEXT, parse_sse
from tests.mockmodel.bodies import assistant, body, env_block, tool_result, user
from tests.support.mockmodel import running_mock, running_mock_in_thread
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio
HEADERS = {"x-api-key": "sk-secret", "anthropic-version": "2023-06-01"}


def make(name: str, turns: list[dict[str, Any]], **extra: Any) -> Scenario:
    return parse_scenario({"name": name, "turns": turns, **extra}, f"{name}.yaml")


TOOLS = make(
    "tools",
    [
        {
            "reply": [
                {"text": "writing"},
                {"tool_use": {"name": "Write", "input": {"file_path": "a.txt", "content": "x"}}},
            ]
        },
        {"reply": [{"text": "done"}]},
    ],
)


async def post(client: httpx.AsyncClient, url: str, payload: dict[str, Any]) -> httpx.Response:
    return await client.post(f"{url}/v1/messages?beta=true", json=payload, headers=HEADERS)


async def test_streaming_reply_and_recording() -> None:
    async with running_mock(TOOLS) as mm, httpx.AsyncClient(timeout=10) as client:
        response = await post(client, mm.url_for("tools"), body(user("go"), env_block("/w")))
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["request-id"].startswith("req_")
        events = parse_sse(response.content)
        names = [n for n, _ in events]
        assert names[0] == "message_start" and names[-1] == "message_stop"
        assert "ping" in names
        delta = next(d for n, d in events if n == "message_delta")
        assert delta["delta"]["stop_reason"] == "tool_use"
        tool = next(
            d["content_block"]
            for n, d in events
            if n == "content_block_start" and d["content_block"]["type"] == "tool_use"
        )
        assert tool["name"] == "Write"
        partial = "".join(
            d["delta"]["partial_json"]
            for n, d in events
            if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
        )
        assert '"/w/a.txt"' in partial  # relative path resolved against the announced cwd
        start = events[0][1]["message"]
        assert start["model"] == "claude-opus-5-5"
        assert start["usage"]["input_tokens"] > 10

        (rec,) = mm.requests
        assert (rec.method, rec.path, rec.query) == ("POST", "/s/tools/v1/messages", "beta=true")
        assert (rec.scenario, rec.turn, rec.request_number, rec.fault) == ("tools", 0, 1, None)
        assert rec.headers["x-api-key"] == "<redacted>"
        assert rec.headers["anthropic-version"] == "2023-06-01"
        assert rec.body["messages"][0]["role"] == "user"
        assert rec.stream is True

        logged = (await client.get(f"{mm.url}/_mock/requests")).json()
        assert logged[0]["turn"] == 0 and logged[0]["headers"]["x-api-key"] == "<redacted>"


async def test_non_streaming_and_fallback() -> None:
    async with running_mock(TOOLS) as mm, httpx.AsyncClient(timeout=10) as client:
        history = body(
            user("go"), assistant("writing", tool="1", tool_name="Write"), tool_result("ok")
        )
        history["stream"] = False
        response = await post(client, mm.url, history)
        message = response.json()
        assert message["type"] == "message"
        assert message["content"] == [{"type": "text", "text": "done"}]
        assert message["stop_reason"] == "end_turn"
        assert message["usage"]["output_tokens"] >= 1
        exhausted = body(*history["messages"], assistant("done"), user("more?"))
        events = parse_sse((await post(client, mm.url, exhausted)).content)
        texts = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
        assert texts == [FALLBACK_TEXT]
        assert [r.turn for r in mm.requests] == [1, "fallback"]


async def test_probes_count_tokens_and_unknown_routes() -> None:
    async with running_mock(TOOLS) as mm, httpx.AsyncClient(timeout=10) as client:
        assert (await client.get(f"{mm.url}/")).status_code == 200
        assert (await client.head(f"{mm.url}/")).status_code == 200
        models = (await client.get(f"{mm.url}/v1/models")).json()
        assert models["data"]
        counted = await client.post(
            f"{mm.url}/v1/messages/count_tokens?beta=true", json=body(user("hello"))
        )
        assert counted.json()["input_tokens"] > 0
        missing = await post(client, f"{mm.url}/s/nope", body(user("x")))
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "not_found_error"
        assert "tools" in missing.json()["error"]["message"]
        bad = await client.post(f"{mm.url}/v1/messages", content=b"not json")
        assert bad.status_code == 400
        with pytest.raises(NotFound):
            mm.url_for("nope")


async def test_http_faults_count_per_scenario() -> None:
    faulty = make(
        "faulty",
        [{"reply": [{"text": "fine"}]}],
        faults=[
            {"on_request": 1, "times": 2, "http_status": 500},
            {"on_request": 3, "http_status": 429, "retry_after": 2},
        ],
    )
    async with running_mock(faulty, TOOLS) as mm, httpx.AsyncClient(timeout=10) as client:
        statuses = []
        for _ in range(4):
            r = await post(client, mm.url_for("faulty"), body(user("x")))
            statuses.append(r.status_code)
            # Another scenario's requests do not advance this scenario's count.
            assert (await post(client, mm.url_for("tools"), body(user("x")))).status_code == 200
        assert statuses == [500, 500, 429, 200]
        limited = [r for r in mm.requests if r.fault == "http_status=429"]
        assert len(limited) == 1 and limited[0].request_number == 3
        r = await post(client, mm.url_for("faulty"), body(user("x")))
        assert r.status_code == 200
    always = make(
        "always",
        [{"reply": [{"text": "x"}]}],
        faults=[{"on_request": 2, "always": True, "http_status": 529}],
    )
    async with running_mock(always) as mm, httpx.AsyncClient(timeout=10) as client:
        codes = [(await post(client, mm.url, body(user("x")))).status_code for _ in range(4)]
        assert codes == [200, 529, 529, 529]
        r = await post(client, mm.url, body(user("x")))
        assert r.json() == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "mock error 529"},
        }
        assert "retry-after" not in r.headers


async def test_retry_after_header() -> None:
    limited = make(
        "limited",
        [{"reply": [{"text": "x"}]}],
        faults=[{"on_request": 1, "http_status": 429, "retry_after": 0}],
    )
    async with running_mock(limited) as mm, httpx.AsyncClient(timeout=10) as client:
        r = await post(client, mm.url, body(user("x")))
        assert r.status_code == 429
        assert r.headers["retry-after"] == "0"
        assert r.json()["error"]["type"] == "rate_limit_error"


async def test_stream_faults(caplog: pytest.LogCaptureFixture) -> None:
    faulty = make(
        "sse",
        [{"reply": [{"text": "fine"}]}],
        faults=[
            {"on_request": 1, "malformed_sse": True},
            {"on_request": 2, "sse_error": "overloaded_error"},
            {"on_request": 3, "disconnect": True},
        ],
    )
    caplog.set_level(logging.WARNING)
    async with running_mock(faulty) as mm, httpx.AsyncClient(timeout=10) as client:
        malformed = await post(client, mm.url, body(user("x")))
        assert b"{this is not json" in malformed.content
        errored = await post(client, mm.url, body(user("x")))
        assert b"event: error" in errored.content and b"overloaded_error" in errored.content
        with pytest.raises(httpx.RemoteProtocolError):
            await post(client, mm.url, body(user("x")))
        ok = await post(client, mm.url, body(user("x")))
        assert ok.status_code == 200 and b"message_stop" in ok.content
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_delay_and_chunked_streaming() -> None:
    slow = make(
        "slow",
        [{"delay": 0.2, "chunk_delay": 0.01, "reply": [{"text": "abcdefghijklmnopqrstuvwxyz"}]}],
        faults=[{"on_request": 1, "delay": 0.2}],
    )
    async with running_mock(slow) as mm, httpx.AsyncClient(timeout=10) as client:
        started = time.monotonic()
        r = await post(client, mm.url, body(user("x")))
        assert time.monotonic() - started >= 0.4
        deltas = [d["delta"]["text"] for n, d in parse_sse(r.content) if n == "content_block_delta"]
        assert "".join(deltas) == "abcdefghijklmnopqrstuvwxyz" and len(deltas) == 6
        assert mm.requests[0].fault == "delay"


async def test_stop_ends_hangs_and_slow_streams_promptly() -> None:
    hang = make(
        "hang",
        [{"reply": [{"text": "x"}]}],
        faults=[{"on_request": 1, "always": True, "hang": True}],
    )
    mm = MockModel([hang])
    await mm.start()
    async with httpx.AsyncClient(timeout=30) as client:
        pending = asyncio.create_task(post(client, mm.url, body(user("x"))))
        await mm.wait_for_requests(1, within=5)
        assert not pending.done()
        started = time.monotonic()
        await mm.stop()
        assert time.monotonic() - started < 3
        with pytest.raises(httpx.HTTPError):
            await pending


async def test_stop_with_nobody_connected_skips_the_graceful_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nobody connected (the agent's Claude Code has exited): the listening socket
    closes without uvicorn's graceful wait (its 0.1 s tick and 0.1 s pause); a
    response still open gets that wait (``test_stop_ends_hangs_...``)."""
    import uvicorn

    graceful: list[bool] = []
    base_shutdown = uvicorn.Server.shutdown

    async def spy(self: uvicorn.Server, sockets: Any = None) -> None:
        graceful.append(True)
        await base_shutdown(self, sockets)

    monkeypatch.setattr(uvicorn.Server, "shutdown", spy)
    mm = MockModel([TOOLS])
    await mm.start()
    port = mm.port
    async with httpx.AsyncClient(timeout=10) as client:
        assert (await post(client, mm.url, body(user("x")))).status_code == 200
    server = mm._server
    assert server is not None

    async def all_closed() -> bool:
        return not server.server_state.connections

    await eventually(all_closed, what="the server to see the client's connection closed")
    await mm.stop()
    assert graceful == []
    with pytest.raises(OSError):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.close()


async def test_client_leaving_a_hang_frees_the_handler() -> None:
    hang = make("hang", [{"reply": [{"text": "x"}]}], faults=[{"on_request": 1, "hang": True}])
    async with running_mock(hang) as mm:
        async with httpx.AsyncClient(timeout=0.3) as client:
            with pytest.raises(httpx.ReadTimeout):
                await post(client, mm.url, body(user("x")))
        async with httpx.AsyncClient(timeout=5) as client:
            assert (await post(client, mm.url, body(user("x")))).status_code == 200


def test_running_in_thread_for_sync_callers() -> None:
    with running_mock_in_thread(TOOLS) as mm:
        r = httpx.post(f"{mm.url}/v1/messages", json=body(user("x")), timeout=10)
        assert r.status_code == 200
        assert len(mm.requests) == 1
    with pytest.raises(RuntimeError):
        _ = mm.url


def test_serve_prints_urls_and_stops_on_sigterm() -> None:
    code = "from agentdeck.mockmodel import serve; serve('127.0.0.1', 0, ['chat', 'demo'])"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("mock model listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1].strip()
        assert proc.stdout.readline().strip() == f"chat: {url}/s/chat"
        assert httpx.get(url, timeout=5).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
