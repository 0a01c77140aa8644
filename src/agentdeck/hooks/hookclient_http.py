"""The hook client's way to a deck by URL and token: ``POST /api/hooks/event``.

Used instead of the home's ``daemon.sock`` when ``AGENTDECK_URL`` and
``AGENTDECK_TOKEN`` are set (the plugin sets them from its ``url`` and ``token``
options). Standard library C halves only, as ``hookclient_impl``: ``http.client``
would cost every tool call ~30 ms of imports (``email.parser`` and more), so this
speaks the little HTTP it needs by hand. The request is HTTP/1.0 with its length:
the answer then comes unchunked and ends when the server closes, so what follows
its head is the socket's own line stream (``hooks.protocol``), read by the same
loop. ``ssl`` (and ``socket``, which it needs) is loaded for an https URL only.

Refused before anything is sent (``Refused``, one line naming the variable, never
the token): a URL that is not ``http(s)://HOST[:PORT][/PATH]`` in plain characters
(no user part, query, fragment, space or control character); plain http to any
host but this machine's loopback, unless ``AGENTDECK_ALLOW_INSECURE_URL=1`` (the
token would cross the network in clear); a token with anything but visible ASCII
(a CR or LF would start a header of its own).
"""

import _signal  # type: ignore[import-not-found]  # loaded at start-up anyway
import _socket
import time

URL_ENV = ("AGENTDECK_URL", "CLAUDE_PLUGIN_OPTION_URL")
TOKEN_ENV = ("AGENTDECK_TOKEN", "CLAUDE_PLUGIN_OPTION_TOKEN")
INSECURE_ENV = "AGENTDECK_ALLOW_INSECURE_URL"
ENV = (*URL_ENV, *TOKEN_ENV, INSECURE_ENV)
ROUTE = "/api/hooks/event"
MAX_HEAD = 64 * 1024  # the answer's status line and headers
MAX_TOKEN = 4096
MAX_URL = 2048
HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
PATH_CHARS = HOST_CHARS | frozenset("_~/")
URL_FORM = "http(s)://HOST[:PORT][/PATH]"

Target = tuple[str, str, int, str]  # scheme, host (v6 without brackets), port, path


class Refused(Exception):
    """The URL or token is not used; the message says why, in one line."""


class Failed(Exception):
    """No answer to read; the message says why (for the fallback's line)."""


def configured(environ: dict[str, str]) -> tuple[Target, str] | None:
    """Where to post and with which token; None: the socket (no URL set)."""
    url = first(environ, URL_ENV)
    if not url:
        return None
    token = first(environ, TOKEN_ENV)
    if not token:
        raise Refused("AGENTDECK_URL is set but no AGENTDECK_TOKEN: give the deck's token too")
    target = parse_url(url)
    if target[0] == "http" and not loopback(target[1]) and not insecure_allowed(environ):
        raise Refused(
            f"AGENTDECK_URL is plain http to {target[1]}, not this machine: the token would "
            f"travel in clear; use https, or set {INSECURE_ENV}=1 if that is meant"
        )
    if len(token) > MAX_TOKEN or not all("!" <= c <= "~" for c in token):
        raise Refused("AGENTDECK_TOKEN holds characters a token cannot have (only visible ASCII)")
    return target, token


def insecure_allowed(environ: dict[str, str]) -> bool:
    """AGENTDECK_ALLOW_INSECURE_URL said yes, in any of the words the settings take."""
    return environ.get(INSECURE_ENV, "").strip().lower() in ("1", "true", "t", "yes", "y", "on")


def first(environ: dict[str, str], names: tuple[str, ...]) -> str:
    for name in names:
        value = environ.get(name, "")
        if value:
            return value
    return ""


def parse_url(url: str) -> Target:
    """``http(s)://HOST[:PORT][/PATH]``; ``Refused`` for anything else (not echoed:
    it may hold what a terminal or a log should not be given)."""
    refused = Refused(f"AGENTDECK_URL is not a URL of the form {URL_FORM}")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https") or len(url) > MAX_URL:
        raise refused
    where, slash, path = rest.partition("/")
    path = (slash + path).rstrip("/")
    segments = path.split("/")[1:]
    if not all(c in PATH_CHARS for c in path) or not all(
        s not in ("", ".", "..") for s in segments
    ):
        raise refused
    if where.startswith("["):  # [v6]:port
        host, bracket, port_part = where[1:].partition("]")
        if not bracket or not host or not all(c in "0123456789abcdefABCDEF:." for c in host):
            raise refused
        if port_part and not port_part.startswith(":"):
            raise refused
        port_text = port_part[1:]
    else:
        host, _, port_text = where.partition(":")
        if not host or not all(c in HOST_CHARS for c in host):
            raise refused
    port = 443 if scheme == "https" else 80
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise refused
        port = int(port_text)
    elif ":" in where and not where.startswith("["):
        raise refused  # "host:" with no port
    return scheme, host, port, path


def loopback(host: str) -> bool:
    """This machine: ``localhost``, ``127.x.y.z`` or ``::1``."""
    if host.lower() == "localhost" or host == "::1":
        return True
    parts = host.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() for p in parts)


def request_head(target: Target, token: str, length: int) -> bytes:
    scheme, host, port, path = target
    shown = f"[{host}]" if ":" in host else host
    if port != (443 if scheme == "https" else 80):
        shown += f":{port}"
    return (
        f"POST {path}{ROUTE} HTTP/1.0\r\n"
        f"Host: {shown}\r\n"
        f"Authorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/x-ndjson\r\n"
        f"Content-Length: {length}\r\n"
        "\r\n"
    ).encode("ascii")


def opened(target: Target, deadline_at: float) -> _socket.socket:
    """A socket connected to the deck (TLS verified for https), within the deadline."""
    scheme, host, port, _ = target
    addresses = resolved(host, port, remaining(deadline_at))
    family, kind, proto, _, address = addresses[0]
    if scheme == "https":
        import socket  # what ssl needs: only an https URL pays for it
        import ssl

        raw = socket.socket(family, kind, proto)
        try:
            raw.settimeout(remaining(deadline_at))
            raw.connect(address)
            context = ssl.create_default_context()
            return context.wrap_socket(raw, server_hostname=host)
        except BaseException:
            raw.close()
            raise
    sock = _socket.socket(family, kind, proto)
    try:
        sock.settimeout(remaining(deadline_at))
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def remaining(deadline_at: float) -> float:
    left = deadline_at - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def resolved(host: str, port: int, seconds: float) -> list[tuple]:  # type: ignore[type-arg]
    """``getaddrinfo`` has no timeout of its own: a timer bounds it."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError

    try:
        previous = _signal.signal(_signal.SIGALRM, expired)
    except ValueError:  # not the main thread (an in-process caller): no timer there
        previous = None
    else:
        _signal.setitimer(_signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        found = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    except _socket.gaierror:
        raise Failed(f"the deck's host {host} is not found") from None
    finally:
        if previous is not None:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGALRM, previous)
    if not found:
        raise Failed(f"the deck's host {host} is not found")
    return found


def answer_head(sock: _socket.socket, deadline_at: float) -> bytes:
    """Read the answer's head; what came after it (the first reply bytes). ``Failed``
    unless it is 200."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(remaining(deadline_at))
        chunk = sock.recv(65536)
        if not chunk:
            raise Failed("the deck closed the connection without an answer")
        data += chunk
        if len(data) > MAX_HEAD and b"\r\n\r\n" not in data[:MAX_HEAD]:
            raise Failed("the deck's answer has no end to its headers")
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    status = status_line[1] if len(status_line) > 1 else b""
    if not status_line[0].startswith(b"HTTP/") or not status.isdigit():
        raise Failed("the deck's answer is not HTTP")
    code = int(status)
    if code == 200:
        return rest
    if code == 401:
        raise Failed("the deck refused the token (HTTP 401)")
    if code == 403:
        raise Failed("the token's user may not report sessions (HTTP 403: operator needed)")
    if code == 421:
        raise Failed(
            "the deck does not answer to this URL's host (HTTP 421): add it to the daemon's "
            "AGENTDECK_ALLOWED_HOSTS"
        )
    raise Failed(f"the deck answered HTTP {code}")
