"""The recording proxy over real HTTP: what the agent gets, what the cassette keeps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentdeck.mockmodel import parse_scenario
from agentdeck.runner.recording.cassette import read_lines, response_bytes
from agentdeck.runner.recording.service import Recorder
from agentdeck.settings import Settings
from tests.conftest import make_settings
from tests.recording.upstream import CHUNKS, Upstream, serving
from tests.support.mockmodel import running_mock
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

API_KEY = "sk-ant-api03-" + "K" * 80
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BODY = {
    "model": "claude-sonnet-4-5",
    "stream": True,
    "max_tokens": 100,
    "messages": [
        {"role": "user", "content": "hello"},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": f"AWS_SECRET_ACCESS_KEY={SECRET}\nok",
                }
            ],
        },
    ],
}
HEADERS = {
    "x-api-key": API_KEY,
    "authorization": f"Bearer {API_KEY}",
    "anthropic-version": "2023-06-01",
    "x-custom-token": "tok-value-123456",
    "content-type": "application/json",
}


@pytest.fixture
async def recorder(tmp_path: Path) -> AsyncIterator[Recorder]:
    rec = Recorder(make_settings(tmp_path))
    try:
        yield rec
    finally:
        await rec.close()


async def _post(url: str, body: Any = BODY, timeout: float = 10.0) -> httpx.Response:
    async with httpx.AsyncClient(timeout=timeout) as client:
        return await client.post(f"{url}/v1/messages?beta=true", json=body, headers=HEADERS)


def _cassette(recorder: Recorder, agent_id: str) -> tuple[str, list[dict[str, Any]]]:
    path = recorder.recordings.path_of(agent_id)
    return path.read_text(), read_lines(path)


async def test_the_stream_reaches_the_agent_and_the_cassette_byte_for_byte(
    recorder: Recorder,
) -> None:
    async with serving(Upstream(gap=0.02)) as up:
        route = await recorder.open("a1", up.url + "/base", "all")
        url = f"{route}/v1/messages?beta=true"
        async with (
            httpx.AsyncClient() as client,
            client.stream("POST", url, json=BODY, headers=HEADERS) as r,
        ):
            got = b"".join([chunk async for chunk in r.aiter_raw()])
            assert r.status_code == 200
            assert r.headers["request-id"] == "req_fixed"
    assert got == b"".join(CHUNKS)
    # Forwarded as asked: path under the upstream's, query, credentials untouched.
    (seen,) = up.seen
    assert (seen["path"], seen["query"]) == ("/base/v1/messages", "beta=true")
    assert seen["headers"]["x-api-key"] == API_KEY
    assert seen["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert seen["headers"]["accept-encoding"] == "identity"
    assert json.loads(seen["body"]) == BODY
    recorder.finish("a1", "done")
    text, records = _cassette(recorder, "a1")
    assert response_bytes(records, 1) == b"".join(CHUNKS)
    chunks = [r for r in records if r["kind"] == "chunk"]
    assert len(chunks) >= 2 and [c["t"] for c in chunks] == sorted(c["t"] for c in chunks)
    assert [r["kind"] for r in records][:3] == ["meta", "request", "response"]
    assert records[-1] == {"kind": "closed", "ts": records[-1]["ts"], "state": "done"}
    (end,) = [r for r in records if r["kind"] == "end"]
    assert end["outcome"] == "complete"


async def test_no_credential_and_no_planted_secret_is_kept(recorder: Recorder) -> None:
    async with serving(Upstream()) as up:
        route = await recorder.open("a1", up.url, "all")
        assert (await _post(route)).status_code == 200
    recorder.finish("a1", "done")
    text, records = _cassette(recorder, "a1")
    assert API_KEY not in text and "K" * 40 not in text
    assert SECRET not in text and "tok-value-123456" not in text
    assert "upstreamsecretvalue" not in text and "session=abc" not in text
    (request,) = [r for r in records if r["kind"] == "request"]
    assert set(request["headers"]) == {
        "anthropic-version",
        "content-type",
        "content-length",
        "accept",
        "user-agent",
    }
    (response,) = [r for r in records if r["kind"] == "response"]
    assert set(response["headers"]) == {"content-type", "request-id"}
    content = request["body"]["json"]["messages"][1]["content"][0]["content"]
    assert "[REDACTED" in content and content.endswith("\nok")


async def test_past_the_cap_bodies_stop_and_the_cassette_says_so(tmp_path: Path) -> None:
    recorder = Recorder(make_settings(tmp_path, recording_max_bytes=4096))
    try:
        big = (b"data: " + b"x" * 1500 + b"\n\n",) * 8
        async with serving(Upstream(chunks=big)) as up:
            route = await recorder.open("a1", up.url, "all")
            for _ in range(3):
                response = await _post(route)
                assert response.content == b"".join(big)  # the agent never notices
        recorder.finish("a1", "done")
        text, records = _cassette(recorder, "a1")
    finally:
        await recorder.close()
    kinds = [r["kind"] for r in records]
    assert kinds.count("capped") == 1 and kinds.count("request") == 3
    capped = kinds.index("capped")
    assert "chunk" not in kinds[capped:] and all("body" not in r for r in records[capped:])
    # Past the cap only the small lines that say what happened: requests, statuses, ends.
    assert len(text.encode()) < 4096 + 2048


async def test_a_500_and_a_429_reach_the_agent_as_they_came(recorder: Recorder) -> None:
    scenario = parse_scenario(
        {
            "name": "faulty",
            "faults": [
                {"on_request": 1, "http_status": 429, "retry_after": 3},
                {"on_request": 2, "http_status": 500, "message": "boom"},
            ],
            "turns": [{"reply": [{"text": "fine"}]}],
        },
        "<test>",
    )
    async with running_mock(scenario) as mm:
        route = await recorder.open("a1", mm.url_for("faulty"), "all")
        first, second, third = [await _post(route) for _ in range(3)]
    assert (first.status_code, first.headers["retry-after"]) == (429, "3")
    assert second.status_code == 500 and "boom" in second.text
    assert third.status_code == 200 and "fine" in third.text
    recorder.finish("a1", "error")
    _, records = _cassette(recorder, "a1")
    statuses = [r["status"] for r in records if r["kind"] == "response"]
    assert statuses == [429, 500, 200]
    (limited, *_) = [r for r in records if r["kind"] == "response"]
    assert limited["headers"]["retry-after"] == "3"
    assert b"boom" in response_bytes(records, 2)


async def test_a_hanging_upstream_is_a_timeout_for_the_agent_and_in_the_cassette(
    recorder: Recorder,
) -> None:
    scenario = parse_scenario(
        {
            "name": "hang",
            "faults": [{"on_request": 1, "always": True, "hang": True}],
            "turns": [{"reply": [{"text": "never"}]}],
        },
        "<test>",
    )
    async with running_mock(scenario) as mm:
        route = await recorder.open("a1", mm.url_for("hang"), "all")
        with pytest.raises(httpx.ReadTimeout):
            await _post(route, timeout=1.0)
        await _wait_for_end(recorder, "a1")
    recorder.finish("a1", "error")
    _, records = _cassette(recorder, "a1")
    (end,) = [r for r in records if r["kind"] == "end"]
    assert end["outcome"] == "client_gone"


async def test_the_upstream_timing_out_is_a_504_recorded_as_a_timeout(tmp_path: Path) -> None:
    settings: Settings = make_settings(tmp_path, api_timeout_seconds=0.5)
    recorder = Recorder(settings)
    scenario = parse_scenario(
        {
            "name": "hang",
            "faults": [{"on_request": 1, "always": True, "hang": True}],
            "turns": [{"reply": [{"text": "never"}]}],
        },
        "<test>",
    )
    try:
        async with running_mock(scenario) as mm:
            route = await recorder.open("a1", mm.url_for("hang"), "all")
            response = await _post(route)
        assert response.status_code == 504
        assert "did not answer in time" in response.text
        recorder.finish("a1", "error")
        _, records = _cassette(recorder, "a1")
    finally:
        await recorder.close()
    (end,) = [r for r in records if r["kind"] == "end"]
    assert end["outcome"] == "timeout"


async def test_an_unknown_route_forwards_nothing(recorder: Recorder) -> None:
    async with serving(Upstream()) as up:
        await recorder.open("a1", up.url, "all")
        for path in ("/r/nope", "/r/", "/v1/messages", "/r/../r"):
            async with httpx.AsyncClient() as client:
                response = await client.post(recorder.url + path, json=BODY, headers=HEADERS)
            assert response.status_code == 404
        assert up.seen == []


async def test_errors_mode_keeps_only_the_cassette_of_a_run_that_failed(
    recorder: Recorder,
) -> None:
    async with serving(Upstream()) as up:
        for agent_id in ("fine", "failed"):
            route = await recorder.open(agent_id, up.url, "errors")
            assert (await _post(route)).status_code == 200
    assert recorder.finish("fine", "done") is None
    kept = recorder.finish("failed", "error")
    assert kept is not None and kept.is_file()
    assert [i.agent_id for i in recorder.recordings.listed()] == ["failed"]
    assert not recorder.recordings.path_of("fine").exists()


async def test_a_resumed_agent_carries_its_cassette_on(recorder: Recorder) -> None:
    async with serving(Upstream()) as up:
        route = await recorder.open("a1", up.url, "all")
        await _post(route)
        recorder.finish("a1", "idle")
        again = await recorder.open("a1", up.url, "all")
        assert again != route
        async with httpx.AsyncClient() as client:  # the old route is gone
            assert (await client.post(f"{route}/v1/messages", json=BODY)).status_code == 404
        await _post(again)
        recorder.finish("a1", "done")
    _, records = _cassette(recorder, "a1")
    assert [r["kind"] for r in records].count("meta") == 1
    assert [r["n"] for r in records if r["kind"] == "request"] == [1, 2]
    (info,) = recorder.recordings.listed()
    assert (info.exchanges, info.state, info.mode) == (2, "done", "all")


async def _wait_for_end(recorder: Recorder, agent_id: str) -> None:
    """Until the proxy has written the exchange's end (the client hung up first)."""
    path = recorder.recordings.path_of(agent_id)

    async def ended() -> bool:
        writer = next(r.writer for r in recorder.routes.values() if r.agent_id == agent_id)
        writer.flush()
        return any(r["kind"] == "end" for r in read_lines(path))

    await eventually(ended, timeout=10, what="the exchange's end in the cassette")


async def test_the_proxy_answers_on_sockets_without_nagle(recorder: Recorder) -> None:
    """Each chunk leaves when it comes: with Nagle on, a chunk after the headers
    waited for the agent's delayed ACK (~40 ms to its first byte, measured)."""
    import socket

    async with serving(Upstream(gap=0.2)) as up:
        route = await recorder.open("a1", up.url, "all")
        async with (
            httpx.AsyncClient() as client,
            client.stream("POST", f"{route}/v1/messages", json=BODY) as response,
        ):
            async for _ in response.aiter_raw():
                server = recorder._serving.uvicorn_server if recorder._serving else None
                assert server is not None
                (connection,) = server.server_state.connections
                sock = connection.transport.get_extra_info("socket")
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
                break


async def test_the_first_request_waits_until_the_start_state_is_kept(recorder: Recorder) -> None:
    import asyncio

    release = asyncio.Event()

    async def start() -> dict[str, Any]:
        await release.wait()
        return {"cwd": "/w", "git_head": "abc"}

    async with serving(Upstream()) as up:
        route = await recorder.open("a1", up.url, "all", start)
        sent = asyncio.create_task(_post(route))
        server = recorder._serving.uvicorn_server if recorder._serving else None
        assert server is not None

        async def in_hand() -> bool:
            return bool(server.server_state.tasks)

        await eventually(in_hand, timeout=10, what="the request in the proxy's hands")
        assert up.seen == [] and not sent.done()  # and it has not gone on
        release.set()
        assert (await sent).status_code == 200
    recorder.finish("a1", "done")
    _, records = _cassette(recorder, "a1")
    assert [r["kind"] for r in records][:3] == ["meta", "start", "request"]
    assert records[1]["git_head"] == "abc"


def test_a_body_scrubbed_from_the_last_ones_parts_is_as_if_scrubbed_alone() -> None:
    """The writer scrubs only the parts it has not seen lately (Claude Code resends
    its system prompt, tools and conversation): the result is scrub_value's."""
    from agentdeck.core.redact import scrub_value
    from agentdeck.runner.recording.scrubbing import RequestScrubber

    tools = [{"name": "Bash", "description": "runs commands " * 50}]
    first = {"system": f"x-api-key: {API_KEY}", "tools": tools, "messages": BODY["messages"]}
    bodies = [
        first,
        {**first, "messages": [*BODY["messages"], {"role": "assistant", "content": "ok"}]},
        {**first, "system": "changed", "api_key": "s3cr3t-value", "stream": True},
        {**first, "stream": 1, "messages": [{"role": "user", "content": f"PGPASSWORD={SECRET}"}]},
        [1, "not a dict", f"token={SECRET}"],
        {"note": "n" * 80, "items": [True, 1, "t" * 80]},
        {"password": "n" * 80, "items": [1, True, "t" * 80]},  # same parts, other names
    ]
    scrubber = RequestScrubber()
    for body in bodies * 2:
        got = scrubber.scrubbed(json.loads(json.dumps(body)))
        assert json.dumps(got) == json.dumps(scrub_value(body))
        assert SECRET not in json.dumps(got) and API_KEY not in json.dumps(got)
        assert ("[REDACTED:" in json.dumps(got)) == ("note" not in json.dumps(got))
    assert SECRET not in repr(scrubber._cache) and API_KEY not in repr(scrubber._cache)


async def test_an_agent_gone_mid_stream_leaves_what_it_was_sent(recorder: Recorder) -> None:
    """The chunks forwarded before the agent hung up are in the cassette, scrubbed as
    one stream, with the exchange ended as client_gone."""
    chunks = (b"data: one\n\n", b"data: two\n\n") + (b"data: more\n\n",) * 8
    async with serving(Upstream(chunks=chunks, gap=0.1)) as up:
        route = await recorder.open("a1", up.url, "all")
        url = f"{route}/v1/messages"
        async with httpx.AsyncClient() as client, client.stream("POST", url, json=BODY) as r:
            got = b""
            async for piece in r.aiter_raw():
                got += piece
                if b"two" in got:
                    break
        await _wait_for_end(recorder, "a1")
    recorder.finish("a1", "error")
    _, records = _cassette(recorder, "a1")
    (end,) = [r for r in records if r["kind"] == "end"]
    assert end["outcome"] == "client_gone"
    assert response_bytes(records, 1).startswith(b"data: one\n\ndata: two\n\n")
