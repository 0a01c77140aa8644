"""The blocking client: HTTP/1.1 over a plain socket, for the CLI's quick path.

Steering commands are typed by people and called in loops by scripts, so this
path imports only the interpreter's own socket (``_socket``: the ``socket``
module's enums load ``enum``; ``http.client`` alone costs more than the whole
request) and ``jsontext``: one request per connection (``Connection: close``),
bodies by ``Content-Length`` or chunked, and server-sent events read by ``sse``.
It talks to our own daemon only. Its errors are the daemon's, rebuilt
(``errors.from_body``); a daemon that does not answer is ``DaemonUnavailable``.

``connect(home)`` finds the daemon of a home, or returns None when there is none
(then commands run embedded). A daemon that holds the home but does not answer is
an error, not a reason to run a second supervisor beside it. A deck named by URL
(``Address``: https, or plain http; ``cli.quick_url`` checks the URL and chooses)
is talked to the same way; ``ssl`` loads for an https URL only.
"""

from __future__ import annotations

import _socket

from agentdeck import jsontext
from agentdeck.client import locate
from agentdeck.errors import DaemonUnavailable, from_body

TYPE_CHECKING = False  # not typing's: its import costs this path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentdeck.client.locate import DaemonInfo

    Params = Mapping[str, Any] | Sequence[tuple[str, Any]]

CONNECT_TIMEOUT = 3.0
READ_TIMEOUT = 30.0
_MAX_HEADER = 64 * 1024
_READ_SIZE = 64 * 1024


class Address:
    """A deck named by URL (``AGENTDECK_URL``): what ``Daemon`` reads of a
    ``DaemonInfo``, with the scheme and the path the API is under. Its process is
    not this machine's to know: no pid, no start time."""

    pid = None
    started_at = None

    def __init__(self, scheme: str, host: str, port: int, path: str) -> None:
        self.scheme, self.host, self.port, self.path = scheme, host, port, path

    @property
    def authority(self) -> str:
        """``HOST[:PORT]`` as the URL gives it (the port left out when the scheme's)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return shown if self.port == default else f"{shown}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.path}"


class Daemon:
    """One running daemon: its address and the token (the home's, or the one
    ``AGENTDECK_TOKEN`` gives for a deck named by URL)."""

    def __init__(self, info: DaemonInfo | Address, token: str) -> None:
        self.info = info
        self.token = token
        if isinstance(info, Address):
            self._tls, self._prefix, self._host = info.scheme == "https", info.path, info.authority
        else:
            shown = f"[{info.host}]" if ":" in info.host else info.host
            self._tls, self._prefix, self._host = False, "", f"{shown}:{info.port}"

    # --- calls ----------------------------------------------------------------

    def get(self, path: str, params: Params | None = None, **kw: Any) -> Any:
        return self.call("GET", path, params=params, **kw)

    def post(self, path: str, body: Any = None, params: Params | None = None) -> Any:
        return self.call("POST", path, body={} if body is None else body, params=params)

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: Any = None,
        timeout: float | None = READ_TIMEOUT,
    ) -> Any:
        """One API call; the JSON answer, or the daemon's error as an AgentdeckError."""
        with self._open(method, path, params, body, timeout) as response:
            try:
                data = response.read_all()
            except OSError as exc:
                raise self._unreachable(exc) from exc
        if response.status >= 400:
            raise from_body(response.status, data, path)
        return jsontext.loads(data) if data else None

    def readiness(self) -> Any:
        """``/readyz``'s answer, ready or not (503 says unhealthy; its body says why);
        None from a daemon older than it (404)."""
        with self._open("GET", "/readyz", None, None, READ_TIMEOUT) as response:
            try:
                data = response.read_all()
            except OSError as exc:
                raise self._unreachable(exc) from exc
        if response.status == 404:
            return None
        if response.status not in (200, 503):
            raise from_body(response.status, data, "/readyz")
        return jsontext.loads(data)

    def events(self, path: str, params: Params) -> Iterator[tuple[str, str]]:
        """Server-sent events as ``(kind, data)`` until the daemon ends the stream."""
        from agentdeck.client.sse import EventStreamReader  # here: most commands read none

        with self._open("GET", path, params, None, None) as response:
            if response.status >= 400:
                raise from_body(response.status, response.read_all(), path)
            reader = EventStreamReader()
            try:
                for chunk in response.chunks():
                    for event in reader.feed(chunk):
                        yield event.kind, event.data
            except OSError as exc:
                raise DaemonUnavailable(f"lost the daemon's event stream: {exc!r}") from exc

    # --- the wire -------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        params: Params | None,
        body: Any,
        timeout: float | None,
    ) -> _Response:
        target = self._prefix + _escape(path, safe="/")
        if params:
            items = params.items() if hasattr(params, "items") else params
            target += "?" + "&".join(
                f"{_escape(k)}={_escape(_text(v))}" for k, v in items if v is not None
            )
        payload = b"" if body is None else jsontext.dumps(body).encode()
        head = [
            f"{method} {target} HTTP/1.1",
            f"Host: {self._host}",
            f"Authorization: Bearer {self.token}",
            "X-Agentdeck-Client: cli",
            "Accept: application/json",
            "Connection: close",
        ]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        try:
            sock = _connect(self.info.host, self.info.port)
            if self._tls:
                sock = _secured(sock, self.info.host)
            sock.settimeout(timeout)
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
            return _Response(sock)
        except OSError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: BaseException) -> DaemonUnavailable:
        what = "timed out" if isinstance(exc, TimeoutError) else repr(exc)
        by_url = isinstance(self.info, Address)
        return DaemonUnavailable(
            f"the agentdeck daemon at {self.info.url} did not answer: {what}",
            hint="check AGENTDECK_URL, or unset it for this home's daemon"
            if by_url
            else "`agentdeck status` checks it; `agentdeck down` stops it",
        )


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _escape(text: str, safe: str = "") -> str:
    """Percent-encoding (RFC 3986), as ``urllib.parse.quote`` does it: that module
    costs more to import than this whole request takes."""
    keep = _UNRESERVED | frozenset(safe.encode())
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in text.encode())


def _connect(host: str, port: int) -> _socket.socket:
    """A connection to the daemon. An address is connected to as it is (a name is
    looked up first, each of its addresses tried in turn, as ``create_connection``
    does)."""
    if ":" in host or host.replace(".", "").isdigit():  # an IPv6 or IPv4 address
        family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
        return _connected(family, (host, port))
    found = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    last: OSError = OSError(f"{host} has no address")
    for family, _, _, _, address in found:
        try:
            return _connected(family, address)
        except OSError as exc:
            last = exc
    raise last


def _connected(family: int, address: tuple[Any, ...]) -> _socket.socket:
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _secured(raw: _socket.socket, host: str) -> Any:
    """TLS over ``raw``, the certificate verified against ``host`` as the hook client
    does (``ssl.create_default_context``). ``ssl`` wraps a ``socket.socket``: the
    connected descriptor is handed over to one."""
    import socket  # what ssl needs: only an https URL pays for it
    import ssl

    timeout = raw.gettimeout()
    sock = socket.socket(fileno=raw.detach())
    try:
        sock.settimeout(timeout)
        return ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Reader:
    """Lines and sized reads off a socket, buffered (what ``socket.makefile``
    gives, which needs the ``socket`` module)."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self._ended = False

    def _fill(self) -> bool:
        if self._ended:
            return False
        chunk = self._sock.recv(_READ_SIZE)
        if not chunk:
            self._ended = True
            return False
        self._buffer += chunk
        return True

    def readline(self, limit: int) -> bytes:
        """Up to and including the next newline (at most ``limit`` bytes)."""
        while (end := self._buffer.find(b"\n", 0, limit)) < 0 and len(self._buffer) < limit:
            if not self._fill():
                break
        cut = end + 1 if end >= 0 else min(limit, len(self._buffer))
        line, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return line

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes (fewer if the connection ends first); all that is left
        with ``size < 0``."""
        while (size < 0 or len(self._buffer) < size) and self._fill():
            pass
        cut = len(self._buffer) if size < 0 else size
        data, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return data


class _Response:
    """An HTTP/1.1 answer read off a socket: status, headers, then the body."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._file = _Reader(sock)
        try:
            status_line = self._file.readline(_MAX_HEADER)
            parts = status_line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
                raise OSError(f"not an HTTP answer: {status_line[:80]!r}")
            self.status = int(parts[1])
            self.headers: dict[str, str] = {}
            while (line := self._file.readline(_MAX_HEADER)) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                self.headers[name.strip().lower()] = value.strip()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def read_all(self) -> bytes:
        return b"".join(self.chunks())

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size_line = self._file.readline(_MAX_HEADER)
                if not size_line:
                    return  # the daemon went away mid-stream
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                yield self._file.read(size)
                self._file.readline(_MAX_HEADER)  # the CRLF after each chunk
        elif "content-length" in self.headers:
            yield self._file.read(int(self.headers["content-length"]))
        else:
            yield self._file.read()


_NOUNS = {"agents": "agent", "approvals": "approval request", "asks": "question"}


def api_path(kind: str, ref: str, action: str | None = None) -> str:
    """``/api/<kind>/<ref>[/<action>]``. An empty ref names nothing (its path would
    be the list's, or no route): ``NotFound``, as ``RemoteDeck`` says it."""
    if not ref:
        from agentdeck.errors import NotFound

        raise NotFound(_NOUNS[kind], ref)
    path = f"/api/{kind}/{ref}"
    return f"{path}/{action}" if action else path


def connect(home_dir: str | Path) -> Daemon | None:
    """The daemon of this home, or None if none runs."""
    found = locate.find(home_dir)
    if found is None:
        return None
    info, token = found
    if token is None:
        raise DaemonUnavailable(
            f"a daemon runs for {home_dir} but its token is missing",
            hint="restart it: `agentdeck down && agentdeck up`",
        )
    return Daemon(info, token)
