"""``POST /hooks/NAME``: a webhook delivery starts an agent of the trigger's template
with its prompt template rendered over the payload (the Deck's ``receive_webhook``,
``daemon.deck.triggers``; ``core.triggers``).

No bearer token: the HMAC is the credential, so this answers before the token check
(an outer layer of the app, as ``web.health``). Here, before the Deck: 421 for an
unknown Host header (as everywhere), 405 for anything but POST, 404 for a name no
trigger can have, 413 for a body over 1 MiB (by its Content-Length, or once that
much is read, never more). The Deck answers the rest: 401 bad signature or no such trigger
(the same answer), 409 replay, 429 rate, 202 started.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from agentdeck.core.triggers import MAX_BODY_BYTES, NAME_RE, HookAnswer
from agentdeck.daemon.deck import Deck
from agentdeck.web.auth import LOOPBACK, host_name

PREFIX = "/hooks/"


class _TooBig(Exception):
    pass


class HookDoor:
    def __init__(self, app: ASGIApp, *, deck: Deck, hosts: Iterable[str]) -> None:
        self.app = app
        self.deck = deck
        self.hosts = frozenset(h.lower() for h in (*LOOPBACK, *hosts))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        answer = await self._answer(scope, receive)
        await _send(send, answer)

    async def _answer(self, scope: Scope, receive: Receive) -> HookAnswer:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if host_name(headers.get("host", "")).lower() not in self.hosts:
            return HookAnswer(421, "misdirected request: unknown Host header")
        if scope["method"] != "POST":
            return HookAnswer(405, "a webhook is delivered by POST")
        name = scope["path"][len(PREFIX) :]
        if not NAME_RE.match(name):
            return HookAnswer(404, "no such trigger")
        try:
            body = await _body(headers, receive)
        except _TooBig:
            return HookAnswer(413, f"a delivery holds at most {MAX_BODY_BYTES} bytes")
        client = scope.get("client") or ("?", 0)
        return await self.deck.receive_webhook(
            name,
            body,
            signature=headers.get("x-hub-signature-256"),
            delivery=headers.get("x-github-delivery"),
            event=headers.get("x-github-event"),
            peer=str(client[0]),
        )


async def _body(headers: dict[str, str], receive: Receive) -> bytes:
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _TooBig
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooBig
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _send(send: Send, answer: HookAnswer) -> None:
    data = json.dumps(answer.to_dict()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": answer.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
