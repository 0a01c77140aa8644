"""The recording proxy reaches its upstream as the agent's Claude Code would: over
real TLS to an upstream whose certificate a private CA made in the test signed,
trusting ``NODE_EXTRA_CA_CERTS``, presenting ``CLAUDE_CODE_CLIENT_CERT``, going
through ``HTTPS_PROXY`` (a real CONNECT proxy) unless ``NO_PROXY`` covers the host."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.endpoints import ModelEndpoint
from agentdeck.daemon.compose import build_runner
from agentdeck.egress import Reach, bypassed, past_proxies, proxy_for
from agentdeck.mockmodel import MockModel, load_scenario
from agentdeck.runner.recording.cassette import read_lines, response_bytes
from agentdeck.runner.recording.service import Recorder
from agentdeck.runner.recording.store import Recordings
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.recording.upstream import CHUNKS, Upstream, serving
from tests.support.tls import Pki, make_pki, pipe

pytestmark = pytest.mark.anyio

HEADERS = {"x-api-key": "sk-ant-api03-" + "K" * 80, "content-type": "application/json"}
BODY = {"model": "claude-sonnet-4-5", "stream": True, "max_tokens": 10, "messages": []}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@contextlib.asynccontextmanager
async def _listening(handle: Any, **tls: Any) -> AsyncIterator[int]:
    """A server on 127.0.0.1 whose connections are all closed when it stops."""
    writers: set[asyncio.StreamWriter] = set()

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        try:
            await handle(reader, writer, writers)
        finally:
            writer.close()

    server = await asyncio.start_server(tracked, "127.0.0.1", 0, **tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def tls_front(backend: str, ctx: ssl.SSLContext) -> AsyncIterator[str]:
    """HTTPS on 127.0.0.1 in front of the plain ``backend`` URL (its path kept)."""
    url = httpx.URL(backend)

    async def relay(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        writers: set[asyncio.StreamWriter],
    ) -> None:
        into, back = await asyncio.open_connection(url.host, url.port)
        writers.add(back)
        await asyncio.gather(pipe(reader, back), pipe(into, writer))

    async with _listening(relay, ssl=ctx) as port:
        yield f"https://127.0.0.1:{port}{url.raw_path.decode()}".rstrip("/")


@dataclass
class ConnectProxy:
    """An HTTP proxy that only tunnels (CONNECT), and only to this machine's
    127.0.0.1, remembering each target; any other request it refuses, remembering
    its request line."""

    targets: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    url: str = ""

    async def __call__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        writers: set[asyncio.StreamWriter],
    ) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n", 1)[0].decode()
        method, target, _ = line.split(" ", 2)
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or host != "127.0.0.1":
            self.refused.append(line)
            writer.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            return
        self.targets.append(target)
        into, back = await asyncio.open_connection(host.strip("[]"), int(port))
        writers.add(back)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(pipe(reader, back), pipe(into, writer))


@contextlib.asynccontextmanager
async def connect_proxy() -> AsyncIterator[ConnectProxy]:
    proxy = ConnectProxy()
    async with _listening(proxy) as port:
        proxy.url = f"http://127.0.0.1:{port}"
        yield proxy


@contextlib.asynccontextmanager
async def https_upstream(pki: Pki, *, client_certs: bool = False) -> AsyncIterator[Upstream]:
    """The scripted upstream (tests.recording.upstream), its ``url`` over HTTPS."""
    async with serving(Upstream()) as up:
        plain = up.url
        async with tls_front(plain, pki.server_context(client_certs=client_certs)) as url:
            up.url = url
            yield up


@pytest.fixture
async def recorder(tmp_path: Path) -> AsyncIterator[Recorder]:
    rec = Recorder(make_settings(tmp_path), environ={})
    try:
        yield rec
    finally:
        await rec.close()


async def _post(route: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30.0) as client:
        return await client.post(f"{route}/v1/messages", json=BODY, headers=HEADERS)


def _ends(recorder: Recorder, agent_id: str) -> list[dict[str, Any]]:
    return [r for r in read_lines(recorder.recordings.path_of(agent_id)) if r["kind"] == "end"]


def _env(recorder: Recorder, **values: str) -> None:
    recorder.environ = values


async def test_the_ca_in_node_extra_ca_certs_is_trusted(recorder: Recorder, pki: Pki) -> None:
    _env(recorder, NODE_EXTRA_CA_CERTS=str(pki.ca))
    async with https_upstream(pki) as up:
        route = await recorder.open("a1", up.url, "all")
        response = await _post(route)
    assert response.status_code == 200
    assert response.content == b"".join(CHUNKS)
    (seen,) = up.seen
    assert seen["path"] == "/v1/messages" and json.loads(seen["body"]) == BODY
    recorder.finish("a1", "done")
    records = read_lines(recorder.recordings.path_of("a1"))
    assert [e["outcome"] for e in _ends(recorder, "a1")] == ["complete"]
    assert response_bytes(records, 1) == b"".join(CHUNKS)


async def test_without_the_ca_the_cassette_names_the_certificate_failure(
    recorder: Recorder, pki: Pki
) -> None:
    async with https_upstream(pki) as up:
        route = await recorder.open("a1", up.url, "all")
        response = await _post(route)
    assert response.status_code == 502  # an answer, not a hang
    assert response.json()["error"]["type"] == "proxy_error"
    assert up.seen == []
    (end,) = _ends(recorder, "a1")
    assert end["outcome"] == "upstream_error"
    assert "CERTIFICATE_VERIFY_FAILED" in end["detail"], end["detail"]


@pytest.mark.parametrize("bad", ["missing", "not-pem", "a-directory"])
async def test_an_unusable_ca_file_is_a_warning_naming_the_variable_not_a_refusal(
    recorder: Recorder, pki: Pki, tmp_path: Path, bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "corp-ca.pem"
    if bad == "not-pem":
        path.write_text("this is no certificate\n")
    elif bad == "a-directory":
        path.mkdir()
    _env(recorder, NODE_EXTRA_CA_CERTS=str(path))
    caplog.set_level(logging.WARNING, logger="agentdeck.egress")
    async with https_upstream(pki) as up:
        # The agent starts as it would unrecorded (Claude Code, too, goes on with
        # its default CAs): its route is there.
        route = await recorder.open("a1", up.url, "all")
        response = await _post(route)
    said = [r.getMessage() for r in caplog.records if "NODE_EXTRA_CA_CERTS" in r.getMessage()]
    assert len(said) == 1 and str(path) in said[0], said
    # The default CAs do not know the private one: said in the cassette, 502 to the agent.
    assert response.status_code == 502
    (end,) = _ends(recorder, "a1")
    assert end["outcome"] == "upstream_error" and "CERTIFICATE_VERIFY_FAILED" in end["detail"]


async def test_clients_are_shared_by_agents_reached_alike_and_differ_with_the_env(
    recorder: Recorder, pki: Pki
) -> None:
    async with https_upstream(pki) as up:
        untrusting = await recorder.open("a1", up.url, "all")
        _env(recorder, NODE_EXTRA_CA_CERTS=str(pki.ca))
        trusting = await recorder.open("a2", up.url, "all")
        also = await recorder.open("a3", up.url + "/other", "all")
        assert (await _post(untrusting)).status_code == 502
        assert (await _post(trusting)).status_code == 200
        assert (await _post(also)).status_code == 200
    clients = {r.agent_id: r.client for r in recorder.routes.values()}
    assert clients["a2"] is clients["a3"] and clients["a1"] is not clients["a2"]


async def test_the_client_certificate_is_presented(recorder: Recorder, pki: Pki) -> None:
    async with https_upstream(pki, client_certs=True) as up:
        _env(recorder, NODE_EXTRA_CA_CERTS=str(pki.ca))
        refused = await _post(await recorder.open("a1", up.url, "all"))
        _env(
            recorder,
            NODE_EXTRA_CA_CERTS=str(pki.ca),
            CLAUDE_CODE_CLIENT_CERT=str(pki.client_cert),
            CLAUDE_CODE_CLIENT_KEY=str(pki.client_key),
        )
        accepted = await _post(await recorder.open("a2", up.url, "all"))
    assert refused.status_code == 502
    assert [e["outcome"] for e in _ends(recorder, "a1")] == ["upstream_error"]
    assert accepted.status_code == 200 and accepted.content == b"".join(CHUNKS)
    assert len(up.seen) == 1


async def test_through_https_proxy_unless_no_proxy_covers_the_host(
    recorder: Recorder, pki: Pki
) -> None:
    async with https_upstream(pki) as up, connect_proxy() as proxy:
        port = httpx.URL(up.url).port
        _env(recorder, NODE_EXTRA_CA_CERTS=str(pki.ca), HTTPS_PROXY=proxy.url)
        proxied = await _post(await recorder.open("a1", up.url, "all"))
        assert proxied.status_code == 200 and proxied.content == b"".join(CHUNKS)
        assert proxy.targets == [f"127.0.0.1:{port}"]
        _env(
            recorder,
            NODE_EXTRA_CA_CERTS=str(pki.ca),
            https_proxy=proxy.url,
            NO_PROXY="localhost,127.0.0.1",
        )
        direct = await _post(await recorder.open("a2", up.url, "all"))
        assert direct.status_code == 200 and direct.content == b"".join(CHUNKS)
        assert proxy.targets == [f"127.0.0.1:{port}"]  # none more
    assert len(up.seen) == 2


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "covered"),
    [
        ("", "api.anthropic.com", 443, False),
        ("*", "api.anthropic.com", 443, True),
        ("localhost 127.0.0.1", "127.0.0.1", 8443, True),
        (".anthropic.com", "api.anthropic.com", 443, True),
        ("*.anthropic.com", "api.anthropic.com", 443, True),
        ("anthropic.com", "api.anthropic.com", 443, False),
        ("api.anthropic.com", "API.anthropic.com", 443, True),
        ("api.anthropic.com:8443", "api.anthropic.com", 443, False),
        ("api.anthropic.com:443", "api.anthropic.com", 443, True),
        ("10.0.0.0/8, ::1", "10.2.3.4", 443, True),
        ("10.0.0.0/8, ::1", "::1", 443, True),
        ("[::1]:80", "::1", 443, False),
        ("10.0.0.0/8", "gateway.corp", 443, False),
    ],
)
def test_no_proxy_entries(no_proxy: str, host: str, port: int, covered: bool) -> None:
    assert bypassed(host, port, no_proxy) is covered


def test_which_proxy_for_which_upstream() -> None:
    env = {"HTTPS_PROXY": "https://gw.corp:8443", "HTTP_PROXY": "gw.corp:3128"}
    assert proxy_for("https://api.anthropic.com", env) == "https://gw.corp:8443"
    assert proxy_for("http://10.1.1.1:8000/v1", env) == "http://gw.corp:3128"
    assert proxy_for("https://api.anthropic.com", {"ALL_PROXY": "http://p:1"}) == "http://p:1"
    assert proxy_for("https://api.anthropic.com", {"HTTP_PROXY": "http://p:1"}) is None
    assert proxy_for("http://127.0.0.1:9/s/x", {**env, "no_proxy": "127.0.0.1"}) is None
    # A plain upstream through a plain proxy speaks no TLS: no CA is loaded for it.
    assert Reach.of("http://10.1.1.1:8000", env).trust is None
    assert Reach.of("http://10.1.1.1:8000", {"HTTP_PROXY": "https://gw:1"}).trust is not None


def test_the_agent_is_told_to_reach_the_recording_proxy_directly() -> None:
    route = "http://127.0.0.1:4567/r/token"
    assert past_proxies(route, {}) == {}  # no proxy: its environment unchanged
    assert past_proxies(route, {"HTTP_PROXY": "http://gw:3128"}) == {
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }
    told = past_proxies(route, {"https_proxy": "http://gw:3128", "NO_PROXY": ".corp"})
    assert told == {"NO_PROXY": ".corp,127.0.0.1", "no_proxy": ".corp,127.0.0.1"}
    covered = {"HTTPS_PROXY": "http://gw:3128", "no_proxy": "localhost,127.0.0.1"}
    assert past_proxies(route, covered)["no_proxy"] == "localhost,127.0.0.1"


@pytest.mark.cli
async def test_a_recorded_agent_reaches_its_tls_endpoint_through_the_proxy(
    tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real Claude Code, recorded, its endpoint HTTPS under the private CA, and
    egress only through a proxy (HTTPS_PROXY and HTTP_PROXY, no NO_PROXY): the agent
    reaches the recording proxy directly, the recording proxy its endpoint through a
    CONNECT tunnel."""
    settings = make_settings(tmp_path)
    settings.ensure_home()
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(pki.ca))
    monkeypatch.setenv("P1_TLS_KEY", "sk-p1-tls-key")
    for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "alpha.yaml"
    path.write_text(
        yaml.safe_dump({"name": "alpha", "turns": [{"reply": [{"text": "answer over tls"}]}]})
    )
    model = MockModel([load_scenario(path)])
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        async with (
            model,
            tls_front(model.url_for("alpha"), pki.server_context()) as url,
            connect_proxy() as proxy,
        ):
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            (settings.home / "endpoints.yaml").write_text(
                yaml.safe_dump({"alpha": {"base_url": url, "api_key_env": "P1_TLS_KEY"}})
            )
            spec = AgentSpec(
                prompt="hello", template="t", model_endpoint=ModelEndpoint("alpha"), record=True
            )
            session = await runner.start(spec)
            await session.wait_finished(timeout=120)
            assert session.agent.state == AgentState.DONE, session.agent.last_error
            assert any(r.path.endswith("/v1/messages") for r in model.requests)
            # Every exchange through the tunnel; none of the agent's to the proxy.
            assert set(proxy.targets) == {url.split("/")[2]}
            assert not [line for line in proxy.refused if "127.0.0.1" in line], proxy.refused
            await runner.shutdown()  # the cassette closed
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()
    records = Recordings.of(settings).records(session.agent.id)
    (meta,) = [r for r in records if r["kind"] == "meta"]
    assert meta["upstream"] == url
    ends = [r for r in records if r["kind"] == "end"]
    assert ends and all(e["outcome"] == "complete" for e in ends), ends
    messages = [r["n"] for r in records if r["kind"] == "request" and "messages" in r["path"]]
    assert any(b"answer over tls" in response_bytes(records, n) for n in messages)
