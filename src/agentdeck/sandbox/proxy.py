"""What a sandboxed agent reaches the network through: Unix sockets agentdeck
serves outside the sandbox, relayed from loopback ports inside it.

- ``AllowlistProxy``: an HTTP proxy (``CONNECT host:port`` for TLS, absolute-URI
  requests for plain HTTP) that connects only to allowed hosts; a refusal is a
  403 that says why, and is reported (``on_blocked``) so it becomes an event.
- ``Forward``: a plain relay to one fixed address (the model endpoint on
  loopback, which the agent reaches as itself inside the sandbox).

Names are resolved here, outside: a sandbox resolves nothing itself. ``hosts``
maps names to addresses first (like ``curl --resolve``), for names with no DNS.

An allowed host leaves the machine as the agent's Claude Code would reach it
unconfined: through the proxy the daemon's environment names for it
(``HTTPS_PROXY`` for a ``CONNECT``, ``HTTP_PROXY`` for plain HTTP, ``NO_PROXY``
bypassing; ``agentdeck.egress`` reads them), by a ``CONNECT`` tunnel with the
proxy URL's userinfo as ``Proxy-Authorization``; that proxy resolves the name. A
name in ``hosts`` is reached at its address directly. The allowlist is checked before anything
leaves: a refused host never reaches that proxy. Its refusal (an answer other than
2xx, or no answer) is a 502 to the agent naming its answer, never its credentials.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import logging
import os
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from agentdeck.egress import Trust, proxy_for

logger = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 15.0
HEAD_TIMEOUT = 30.0
CHUNK = 65536

Allowed = Callable[[str, int], bool]
Blocked = Callable[[str, int], None]
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class UpstreamRefused(Exception):
    """The upstream proxy did not open the tunnel; the message says what it answered
    (never its credentials)."""


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    b: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Carry bytes both ways until both sides are done, then close both."""
    try:
        await asyncio.gather(_pipe(a[0], b[1]), _pipe(b[0], a[1]))
    finally:
        # Both closed before either is waited for: a stop (cancel) while the first
        # one closes must not leave the other open.
        writers = (a[1], b[1])
        for writer in writers:
            writer.close()
        for writer in writers:
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _refusal(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"X-Agentdeck-Sandbox: blocked\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


class _Server:
    def __init__(self) -> None:
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, path: Path) -> None:
        self._server = await asyncio.start_unix_server(self._track, path=str(path))
        path.chmod(0o600)

    async def _track(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self.handle(reader, writer)
        except asyncio.CancelledError:
            # close() ends the connections still open. Ended quietly: on Python 3.11
            # asyncio's stream callback calls exception() on a cancelled handler and
            # logs the CancelledError it gets as an error.
            writer.close()
        except Exception:  # noqa: BLE001 - one connection's failure is that connection's
            logger.debug("sandbox relay connection failed", exc_info=True)
            writer.close()
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


class Forward(_Server):
    """Every connection to the socket goes to ``host:port``."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host, self.port = host, port

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                upstream = await asyncio.open_connection(self.host, self.port)
        except (OSError, TimeoutError):
            writer.close()
            return
        await splice((reader, writer), upstream)


class AllowlistProxy(_Server):
    """``environ``: where the proxy variables are read (None: the daemon's
    environment, read at each connection)."""

    def __init__(
        self,
        allowed: Allowed,
        on_blocked: Blocked,
        hosts: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.allowed = allowed
        self.on_blocked = on_blocked
        self.hosts = {k.lower(): v for k, v in (hosts or {}).items()}
        self.environ = environ

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            writer.close()
            return
        if len(head) > HEAD_LIMIT:
            await self._reply(writer, _refusal(431, "Request Header Fields Too Large", "too big"))
            return
        first, _, rest = head.partition(b"\r\n")
        try:
            method, target, version = first.decode("latin-1").split(" ", 2)
        except ValueError:
            await self._reply(writer, _refusal(400, "Bad Request", "not an HTTP proxy request"))
            return
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            port = int(port_text) if port_text.isdigit() else 443
            forward = b""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                text = "send an absolute http:// URL, or CONNECT host:port for TLS"
                await self._reply(writer, _refusal(400, "Bad Request", text))
                return
            host, port = url.hostname, url.port or 80
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            kept = [
                line
                for line in rest.split(b"\r\n")
                if line and not line.lower().startswith((b"proxy-", b"connection:"))
            ]
            forward = (
                b"\r\n".join(
                    [f"{method} {path} {version}".encode("latin-1"), *kept, b"Connection: close"]
                )
                + b"\r\n\r\n"
            )
        host = host.strip("[]").lower()
        if not self.allowed(host, port):
            self.on_blocked(host, port)
            text = (
                f"agentdeck's sandbox blocked {host}:{port}: it is not in the profile's "
                "network.allowed_domains"
            )
            await self._reply(writer, _refusal(403, "Forbidden", text))
            return
        env = os.environ if self.environ is None else self.environ
        # A name ``hosts`` maps is an explicit route (a name no DNS knows, the
        # upstream proxy's included): reached at its address, directly.
        scheme = "http" if forward else "https"
        via = None if host in self.hosts else proxy_for(f"{scheme}://{_authority(host, port)}", env)
        try:
            if via is not None:
                upstream = await _tunnel(via, host, port, env)
            else:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    upstream = await asyncio.open_connection(self.hosts.get(host, host), port)
        except UpstreamRefused as exc:
            logger.warning("sandbox proxy could not reach %s:%s: %s", host, port, exc)
            text = f"agentdeck's sandbox proxy could not reach {host}:{port}: {exc}"
            await self._reply(writer, _refusal(502, "Bad Gateway", text))
            return
        except (OSError, TimeoutError) as exc:
            text = f"agentdeck's sandbox proxy could not reach {host}:{port}: {exc}"
            await self._reply(writer, _refusal(502, "Bad Gateway", text))
            return
        try:
            if forward:
                upstream[1].write(forward)
            else:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
        except BaseException:  # the client gone, or a stop: the upstream goes too
            upstream[1].close()
            raise
        await splice((reader, writer), upstream)

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, data: bytes) -> None:
        with contextlib.suppress(Exception):
            writer.write(data)
            await writer.drain()
        writer.close()


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _shown(url: str) -> str:
    """The proxy's URL as said to the agent and the log: without its userinfo."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or "?"
    return f"{parts.scheme}://{_authority(host, port) if port else host}"


def _printable(text: str, limit: int = 200) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


@functools.lru_cache(maxsize=4)
def _context(trust: Trust) -> ssl.SSLContext:
    """An https proxy's certificate is judged as Claude Code judges its hosts' (the
    context made once per set of variables: loading the CAs costs 20-40 ms of CPU)."""
    return trust.context()


async def _tunnel(url: str, host: str, port: int, env: Mapping[str, str]) -> Streams:
    """A ``CONNECT host:port`` tunnel through the proxy at ``url``: its streams, or
    ``UpstreamRefused`` saying why not."""
    shown = _shown(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        proxy_port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise UpstreamRefused(f"the upstream proxy {shown} has no valid port") from None
    if scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamRefused(f"the upstream proxy {shown} is not an http:// or https:// proxy URL")
    tls = await asyncio.to_thread(_context, Trust.of(env)) if scheme == "https" else None
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            reader, writer = await asyncio.open_connection(
                parts.hostname,
                proxy_port,
                ssl=tls,
                server_hostname=parts.hostname if tls else None,
            )
    except (OSError, TimeoutError) as exc:
        why = _printable(str(exc)) or type(exc).__name__
        raise UpstreamRefused(f"the upstream proxy {shown} could not be reached: {why}") from None
    target = _authority(host, port)
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if parts.username is not None:
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        lines.append(f"Proxy-Authorization: Basic {base64.b64encode(secret.encode()).decode()}")
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        async with asyncio.timeout(CONNECT_TIMEOUT):
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        writer.close()
        raise UpstreamRefused(f"the upstream proxy {shown} answered no HTTP") from None
    except TimeoutError:
        writer.close()
        raise UpstreamRefused(
            f"the upstream proxy {shown} did not answer CONNECT {target}"
        ) from None
    except (OSError, asyncio.IncompleteReadError):
        writer.close()
        raise UpstreamRefused(f"the upstream proxy {shown} closed at CONNECT {target}") from None
    except BaseException:  # a stop: the connection goes too
        writer.close()
        raise
    status_line = head.partition(b"\r\n")[0].decode("latin-1")
    version, _, answer = status_line.partition(" ")
    code = answer[:3]
    if not (version.startswith("HTTP/") and code.isdigit() and code.startswith("2")):
        writer.close()
        said = _printable(answer.strip() or status_line.strip()) or "nothing"
        raise UpstreamRefused(f"the upstream proxy {shown} answered {said} to CONNECT {target}")
    return reader, writer
