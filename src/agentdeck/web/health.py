"""``/healthz`` and ``/readyz``: the probes a supervisor, a load balancer or a
person polls, answered before the token check (the outermost layer of the app).

* ``GET /healthz``: liveness. ``{"status": "ok"}``, 200, to anyone: the process
  answers HTTP. With a valid token it also says the version (``doctor`` compares).
* ``GET /readyz``: readiness (the Deck's ``readiness``: store, runner, event loop,
  disk). 200 for ``ok`` and ``degraded``, 503 for ``unhealthy``. Without a token:
  the status word only; the reasons and every check need a valid token (they
  name paths and the store).

A token that is sent but wrong is refused (401), as everywhere: a client learns
its token is bad, and nothing is said to a guesser. The Host check holds here too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from agentdeck import __version__
from agentdeck.core.health import HealthStatus
from agentdeck.core.roles import Principal
from agentdeck.daemon.deck import Deck
from agentdeck.web.auth import LOOPBACK, host_name, refuse
from agentdeck.web.login import session_of

PROBES = frozenset({"/healthz", "/readyz"})


class HealthProbes:
    def __init__(self, app: ASGIApp, *, deck: Deck, file_token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.deck = deck
        self.file_token = file_token
        self.hosts = frozenset(h.lower() for h in (*LOOPBACK, *hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in PROBES:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if host_name(headers.get("host", "")).lower() not in self.hosts:
            await refuse(send, 421, "misdirected request: unknown Host header")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await refuse(send, 405, f"{scope['path']} answers GET only")
            return
        principal: Principal | None = None
        if "authorization" in headers or session_of(headers):
            principal = await self._principal(headers)
            if principal is None:
                await refuse(send, 401, "wrong, revoked or expired token")
                return
        if scope["path"] == "/healthz":
            body: dict[str, Any] = {"status": "ok"}
            if principal is not None:
                body["version"] = __version__
            await _answer(send, 200, body, head=scope["method"] == "HEAD")
            return
        readiness = await self.deck.readiness()
        code = 503 if readiness.status is HealthStatus.UNHEALTHY else 200
        body = readiness.to_dict() if principal is not None else {"status": str(readiness.status)}
        await _answer(send, code, body, head=scope["method"] == "HEAD")

    async def _principal(self, headers: dict[str, str]) -> Principal | None:
        identity = self.deck.identity
        await identity.bootstrap(self.file_token)
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return await identity.by_token(auth[7:].strip())
        session = session_of(headers)
        return await identity.by_session(session) if session else None


async def _answer(send: Send, status: int, body: dict[str, Any], *, head: bool) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if head else data})
