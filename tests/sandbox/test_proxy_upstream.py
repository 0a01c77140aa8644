"""The sandbox's allowlist proxy behind an egress-only corporate proxy: an allowed
host is reached through a CONNECT tunnel of the proxy the daemon's environment
names (``HTTPS_PROXY``/``HTTP_PROXY``, with ``Proxy-Authorization`` from its
userinfo), a ``NO_PROXY`` host directly, a refused host never reaches that proxy,
and that proxy's refusal or absence is a 502 that says what it answered.

Real sockets throughout: the corporate proxy is an asyncio CONNECT proxy here, the
target an HTTP server on 127.0.0.1 that the corporate proxy knows as ``allowed.test``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import shutil
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentdeck.sandbox.proxy import AllowlistProxy, splice
from tests.support.tls import Pki, make_pki

pytestmark = pytest.mark.anyio

NAMES = {"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}  # the corporate proxy's DNS
USER, PASSWORD = "deck-user", "s3cret p@ss"
PROXY_AUTH = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class Corporate:
    """A CONNECT-only proxy: what it was asked (every connection, each tunnel's
    target and ``Proxy-Authorization``), answering ``refuse`` when set."""

    port: int = 0
    connections: int = 0
    tunnels: list[tuple[str, str | None]] = field(default_factory=list)
    refuse: bytes | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        first, *lines = head.split("\r\n")
        method, target, _ = first.split(" ", 2)
        headers = dict(line.split(": ", 1) for line in lines if line)
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            writer.close()
            return
        self.tunnels.append((target, headers.get("Proxy-Authorization")))
        if self.refuse is not None:
            writer.write(self.refuse)
            await writer.drain()
            writer.close()
            return
        name, _, port = target.rpartition(":")
        upstream = await asyncio.open_connection(NAMES.get(name, name), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await splice((reader, writer), upstream)


async def target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An HTTP server that names the request line it got."""
    head = await reader.readuntil(b"\r\n\r\n")
    body = b"TARGET " + head.partition(b"\r\n")[0]
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    writer.close()


@dataclass
class Net:
    corporate: Corporate
    target_port: int
    socket_dir: Path
    blocked: list[tuple[str, int]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def proxy(
        self, environ: Mapping[str, str], hosts: Mapping[str, str] | None = None
    ) -> AsyncIterator[Path]:
        """The sandbox's proxy, reading ``environ`` for the proxy variables; it lets
        ``allowed.test`` and ``127.0.0.1`` through."""
        proxy = AllowlistProxy(
            lambda host, port: host in ("allowed.test", "127.0.0.1"),
            lambda host, port: self.blocked.append((host, port)),
            hosts=hosts,
            environ=environ,
        )
        path = self.socket_dir / "proxy.sock"
        await proxy.start(path)
        try:
            yield path
        finally:
            await proxy.close()
            path.unlink(missing_ok=True)

    def upstream(self, *, auth: bool = True, scheme: str = "http") -> str:
        userinfo = f"{USER}:s3cret%20p%40ss@" if auth else ""
        return f"{scheme}://{userinfo}127.0.0.1:{self.corporate.port}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory: a Unix socket's path has a length limit pytest's
    temporary directories can pass."""
    where = Path(tempfile.mkdtemp(prefix="ad-up-"))
    yield where
    shutil.rmtree(where, ignore_errors=True)


@contextlib.asynccontextmanager
async def serving(socket_dir: Path, tls: ssl.SSLContext | None = None) -> AsyncIterator[Net]:
    """The corporate proxy (speaking TLS with ``tls``) and the target, listening."""
    corporate = Corporate()
    proxy_server = await asyncio.start_server(corporate.handle, "127.0.0.1", 0, ssl=tls)
    target_server = await asyncio.start_server(target, "127.0.0.1", 0)
    corporate.port = proxy_server.sockets[0].getsockname()[1]
    try:
        yield Net(corporate, target_server.sockets[0].getsockname()[1], socket_dir)
    finally:
        for server in (proxy_server, target_server):
            server.close()
        for server in (proxy_server, target_server):
            await server.wait_closed()


@pytest.fixture
async def net(socket_dir: Path) -> AsyncIterator[Net]:
    async with serving(socket_dir) as made:
        yield made


async def answer(reader: asyncio.StreamReader) -> tuple[str, bytes]:
    """An HTTP answer's status line and body (by Content-Length)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    status = head.partition("\r\n")[0]
    length = next(
        (
            int(line.split(":")[1])
            for line in head.split("\r\n")
            if line.lower().startswith("content-length:")
        ),
        0,
    )
    return status, await reader.readexactly(length)


async def connect(path: Path, authority: str) -> tuple[str, bytes]:
    """What an agent gets for ``CONNECT authority`` then a GET through the tunnel
    (the tunnel's body is plain HTTP here: what is carried is the agent's affair)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        status, body = await answer(reader)
        if " 200 " not in f"{status} ":
            return status, body
        writer.write(b"GET /through HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
        return await answer(reader)
    finally:
        writer.close()


async def get(path: Path, url: str) -> tuple[str, bytes]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        writer.write(
            f"GET {url} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: agent's\r\n\r\n".encode()
        )
        return await answer(reader)
    finally:
        writer.close()


async def test_an_allowed_host_is_reached_through_the_upstream_proxy_with_its_credentials(
    net: Net,
) -> None:
    async with net.proxy({"HTTPS_PROXY": net.upstream()}) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 200")
    assert body == b"TARGET GET /through HTTP/1.1"
    assert net.corporate.tunnels == [(f"allowed.test:{net.target_port}", PROXY_AUTH)]


async def test_plain_http_to_an_allowed_host_goes_through_a_tunnel_of_http_proxy(
    net: Net,
) -> None:
    environ = {"HTTP_PROXY": net.upstream(auth=False), "HTTPS_PROXY": "http://127.0.0.1:9"}
    async with net.proxy(environ) as path:
        status, body = await get(path, f"http://allowed.test:{net.target_port}/page?q=1")
    assert status.startswith("HTTP/1.1 200")
    assert body == b"TARGET GET /page?q=1 HTTP/1.1"
    # No credentials in the URL, none sent; the agent's own Proxy- header stays here.
    assert net.corporate.tunnels == [(f"allowed.test:{net.target_port}", None)]


async def test_a_refused_host_never_reaches_the_upstream_proxy(net: Net) -> None:
    async with net.proxy({"HTTPS_PROXY": net.upstream(), "HTTP_PROXY": net.upstream()}) as path:
        tunnelled = await connect(path, f"other.test:{net.target_port}")
        plain = await get(path, f"http://other.test:{net.target_port}/")
    for status, body in (tunnelled, plain):
        assert status.startswith("HTTP/1.1 403")
        assert b"blocked other.test" in body
    assert net.blocked == [("other.test", net.target_port)] * 2
    assert net.corporate.connections == 0


async def test_a_no_proxy_host_is_reached_directly(net: Net) -> None:
    environ = {"HTTPS_PROXY": net.upstream(), "NO_PROXY": "localhost,127.0.0.0/8"}
    async with net.proxy(environ) as path:
        status, body = await connect(path, f"127.0.0.1:{net.target_port}")
    assert status.startswith("HTTP/1.1 200")
    assert body == b"TARGET GET /through HTTP/1.1"
    assert net.corporate.connections == 0


async def test_a_name_the_deck_maps_is_reached_at_its_address_directly(net: Net) -> None:
    """``AGENTDECK_SANDBOX_HOSTS`` names what no DNS knows, the upstream's included."""
    async with net.proxy(
        {"HTTPS_PROXY": net.upstream()}, hosts={"allowed.test": "127.0.0.1"}
    ) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 200")
    assert body == b"TARGET GET /through HTTP/1.1"
    assert net.corporate.connections == 0


async def test_an_upstream_refusal_is_a_502_naming_its_answer_without_credentials(
    net: Net, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentdeck.sandbox.proxy")
    net.corporate.refuse = (
        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
        b'Proxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'
    )
    async with net.proxy({"HTTPS_PROXY": net.upstream()}) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 502")
    text = body.decode()
    assert f"the upstream proxy http://127.0.0.1:{net.corporate.port}" in text
    assert "answered 407 Proxy Authentication Required" in text
    assert f"allowed.test:{net.target_port}" in text
    logged = [r.getMessage() for r in caplog.records if "407" in r.getMessage()]
    assert logged, "the refusal is logged"
    for said in (text, *logged):
        assert USER not in said and "s3cret" not in said and PROXY_AUTH not in said


@pytest.mark.parametrize(
    "refusal",
    [b"HTTP/1.1 403 Forbidden\r\n\r\n", b"HTTP/1.0 502 Bad Gateway\r\n\r\n", b"\r\n\r\n"],
)
async def test_other_refusals_are_502s_naming_them(net: Net, refusal: bytes) -> None:
    net.corporate.refuse = refusal
    async with net.proxy({"https_proxy": net.upstream()}) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 502")
    said = refusal.partition(b" ")[2].partition(b"\r\n")[0].decode() or "nothing"
    assert f"answered {said} to CONNECT allowed.test:{net.target_port}" in body.decode()


async def test_an_upstream_proxy_that_is_down_is_a_502(net: Net) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed below: nothing listens there
    async with net.proxy({"HTTPS_PROXY": f"http://{USER}:pw@127.0.0.1:{port}"}) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 502")
    text = body.decode()
    assert f"the upstream proxy http://127.0.0.1:{port} could not be reached" in text
    assert USER not in text


async def test_an_unusable_proxy_url_is_a_502_saying_so(net: Net) -> None:
    async with net.proxy({"HTTPS_PROXY": "socks5://127.0.0.1:1080"}) as path:
        status, body = await connect(path, f"allowed.test:{net.target_port}")
    assert status.startswith("HTTP/1.1 502")
    assert "socks5://127.0.0.1:1080 is not an http:// or https:// proxy URL" in body.decode()


async def test_an_https_proxy_is_trusted_as_claude_code_trusts_its_hosts(
    socket_dir: Path,
    pki: Pki,
) -> None:
    async with serving(socket_dir, pki.server_context()) as tls_net:
        authority = f"allowed.test:{tls_net.target_port}"
        environ = {"HTTPS_PROXY": tls_net.upstream(scheme="https")}
        async with tls_net.proxy({**environ, "NODE_EXTRA_CA_CERTS": str(pki.ca)}) as path:
            status, body = await connect(path, authority)
        assert status.startswith("HTTP/1.1 200")
        assert body == b"TARGET GET /through HTTP/1.1"
        assert tls_net.corporate.tunnels == [(authority, PROXY_AUTH)]
        # Without its CA, the proxy's certificate is refused, and the agent told so.
        async with tls_net.proxy(environ) as path:
            status, body = await connect(path, authority)
        assert status.startswith("HTTP/1.1 502")
        assert "CERTIFICATE_VERIFY_FAILED" in body.decode()
        assert len(tls_net.corporate.tunnels) == 1
