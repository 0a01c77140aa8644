"""Who may talk to the daemon.

Every request but ``/login`` needs the token: ``Authorization: Bearer <token>``
or the session cookie that opening the printed login URL sets. Requests whose
``Host`` is not a loopback or configured name are refused (DNS rebinding), and
state-changing requests and event streams from a foreign ``Origin`` are refused
(cross-site requests). A pure ASGI middleware, so streaming responses pass
through untouched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "agentdeck_session"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def session_value(token: str) -> str:
    """What the cookie holds: derived from the token, so the token itself never
    sits in the browser's cookie jar."""
    return hmac.new(token.encode(), b"agentdeck-session-v1", hashlib.sha256).hexdigest()


def _host_name(value: str) -> str:
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.session = session_value(token)
        self.hosts = frozenset(h.lower() for h in (*LOOPBACK, *hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = _host_name(headers.get("host", "")).lower()
        if host not in self.hosts:
            await _refuse(send, 421, "misdirected request: unknown Host header")
            return
        path: str = scope["path"]
        method: str = scope["method"]
        origin = headers.get("origin")
        if origin is not None and (method in _UNSAFE or path.endswith("/stream")):
            o = urlsplit(origin)
            if (o.hostname or "").lower() not in self.hosts or o.netloc != headers.get("host"):
                await _refuse(send, 403, "cross-origin request refused")
                return
        if path == "/login":
            await self._login(scope, send)
            return
        if not self._authorized(headers):
            await _refuse(
                send,
                401,
                "missing or wrong token: open the login URL that "
                "`agentdeck up` printed, or send 'Authorization: Bearer <token>'",
                html=method == "GET" and not path.startswith("/api"),
            )
            return
        await self.app(scope, receive, send)

    def _authorized(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return hmac.compare_digest(auth[7:].strip(), self.token)
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie header is simply no login
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value, self.session)

    async def _login(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        # uvicorn's access log prints the path with this scope's query string
        # when the response starts: the token must not end up in the logs.
        scope["query_string"] = b""
        if not hmac.compare_digest(given, self.token):
            await _refuse(send, 401, "wrong login token", html=True)
            return
        cookie = f"{COOKIE}={self.session}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", b"/"),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, message: str, *, html: bool = False) -> None:
    if html:
        body = (
            f"<!doctype html><title>agentdeck</title><h1>{status}</h1><p>{message}</p>"
        ).encode()
        kind = b"text/html; charset=utf-8"
    else:
        body = json.dumps({"error": {"status": status, "message": message}}).encode()
        kind = b"application/json"
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", kind),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})


# Clients of the API that say who they are (``X-Agentdeck-Client``), so the audit
# log and the event say where an answer came from; anything else is "api".
CLIENT_CHANNELS = frozenset({"cli", "tui", "bridge", "mcp"})


def channel_of(request: object) -> str:
    """``user:<channel>`` for an answer given through this request. A chat bridge
    also names the member who answered (``X-Agentdeck-Actor``, e.g.
    ``discord:1234:alice``): ``user:bridge:discord:1234:alice``. Only printable
    text of a bounded length is taken; anything else is just the channel."""
    headers = getattr(request, "headers", {})
    claimed = str(headers.get("x-agentdeck-client", "")).strip().lower()
    channel = claimed if claimed in CLIENT_CHANNELS else "api"
    actor = str(headers.get("x-agentdeck-actor", "")).strip()
    if channel == "bridge" and actor and len(actor) <= 200 and actor.isprintable():
        return f"user:bridge:{actor}"
    return f"user:{channel}"
