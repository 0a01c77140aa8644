"""Who may talk to the daemon, and as whom.

Every request but ``/login`` needs a token: ``Authorization: Bearer <token>``, or
the session cookie a dashboard login sets. The token (or session) is resolved to
a user and a role (``daemon.identity``), put in ``request.state.user`` (the
user's name) and ``request.state.role``; what each route needs is checked by
``web.access``. Requests whose ``Host`` is not a loopback or configured name are
refused (DNS rebinding), and state-changing requests and event streams from a
foreign ``Origin`` are refused (cross-site requests). An event stream ends as
soon as its token is revoked or expires. A pure ASGI middleware, so streaming
responses pass through untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentdeck.core.roles import Principal
from agentdeck.daemon.deck import Identity
from agentdeck.web import login
from agentdeck.web.access import CURRENT
from agentdeck.web.login import session_of

COOKIE = login.COOKIE
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def host_name(value: str) -> str:
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class SecurityMiddleware:
    def __init__(
        self, app: ASGIApp, *, identity: Identity, file_token: str, hosts: Iterable[str]
    ) -> None:
        self.app = app
        self.identity = identity
        self.file_token = file_token
        self.hosts = frozenset(h.lower() for h in (*LOOPBACK, *hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = host_name(headers.get("host", "")).lower()
        if host not in self.hosts:
            await refuse(send, 421, "misdirected request: unknown Host header")
            return
        path: str = scope["path"]
        method: str = scope["method"]
        origin = headers.get("origin")
        if origin is not None and (method in _UNSAFE or path.endswith("/stream")):
            o = urlsplit(origin)
            if (o.hostname or "").lower() not in self.hosts or o.netloc != headers.get("host"):
                await refuse(send, 403, "cross-origin request refused")
                return
        await self.identity.bootstrap(self.file_token)
        if path in ("/login", "/logout"):
            await login.handle(self.identity, scope, receive, send, headers)
            return
        principal = await self._principal(headers)
        if principal is None:
            await refuse(
                send,
                401,
                "missing, wrong, revoked or expired token: open the login URL that "
                "`agentdeck up` printed or log in at /login, or send "
                "'Authorization: Bearer <token>'",
                html=method == "GET" and not path.startswith("/api"),
            )
            return
        state = scope.setdefault("state", {})
        state["user"] = principal.user
        state["role"] = str(principal.role)
        state["principal"] = principal
        CURRENT.set(principal)
        if path.endswith("/stream"):
            await self._guarded(principal, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _principal(self, headers: dict[str, str]) -> Principal | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return await self.identity.by_token(auth[7:].strip())
        session = session_of(headers)
        return await self.identity.by_session(session) if session else None

    async def _guarded(
        self, principal: Principal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """A stream whose token is revoked or expires sees its client leave, and the
        response is ended for it."""
        ended = asyncio.ensure_future(self.identity.ended(principal))
        finished = False

        async def guarded_receive() -> Message:
            pending = asyncio.ensure_future(receive())
            done, _ = await asyncio.wait({pending, ended}, return_when=asyncio.FIRST_COMPLETED)
            if pending in done:
                return pending.result()
            pending.cancel()
            return {"type": "http.disconnect"}

        async def tracking_send(message: Message) -> None:
            nonlocal finished
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, tracking_send)
            if ended.done() and not finished:
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            ended.cancel()


async def refuse(send: Send, status: int, message: str, *, html: bool = False) -> None:
    if html:
        body = (
            f"<!doctype html><title>agentdeck</title><h1>{status}</h1><p>{message}</p>"
            '<p><a href="/login">Log in</a></p>'
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
    """Who acted through this request, for the audit log and the event:
    ``user:<channel>:<user>`` (``user:cli:alice``), the user being the one whose
    token the request carried. A chat bridge names the member who acted
    (``X-Agentdeck-Actor``, e.g. ``discord:1234:alice``):
    ``user:bridge:discord:1234:alice``. Only printable text of a bounded length is
    taken from headers; anything else is just the channel."""
    headers = getattr(request, "headers", {})
    claimed = str(headers.get("x-agentdeck-client", "")).strip().lower()
    channel = claimed if claimed in CLIENT_CHANNELS else "api"
    actor = str(headers.get("x-agentdeck-actor", "")).strip()
    if channel == "bridge" and actor and len(actor) <= 200 and actor.isprintable():
        return f"user:bridge:{actor}"
    return actor_label(request, channel)


def actor_label(request: object, channel: str) -> str:
    """``user:<channel>:<user>``, or ``user:<channel>`` where no user is known."""
    user = getattr(getattr(request, "state", None), "user", None)
    return f"user:{channel}:{user}" if user else f"user:{channel}"
