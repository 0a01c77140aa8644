"""The hook socket's exchange behind the API's door (``POST /api/hooks/event``).

The same request line and reply lines as ``daemon.sock`` (``hooks.protocol``),
handled by the same handler with the same deadline and fallbacks
(``hooks.socket_server``); what differs: the session is the token's user's
(``HookRequest.owner``), and a body the socket would call malformed, or one with a
key the protocol does not have, is the caller's error (``UsageError``: 400), not a
one-line answer, as every API body is.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from agentdeck.errors import UsageError
from agentdeck.hooks.protocol import (
    HookHandler,
    HookReply,
    HookRequest,
    MalformedRequest,
    decode_request,
    encode_pending,
    encode_reply,
)
from agentdeck.hooks.socket_server import HANDLER_DEADLINE

logger = logging.getLogger(__name__)

KEYS = frozenset({"v", "event", "env"})

Said = Callable[[bytes], Awaitable[None]]


def parsed(body: bytes, owner: str) -> HookRequest:
    """``body`` as the socket reads a request line, strictly; owned by ``owner``."""
    try:
        request = decode_request(body)
    except MalformedRequest as exc:
        raise UsageError(f"not a hook event: {exc}") from None
    unknown = sorted(set(json.loads(body)) - KEYS)  # it parsed: an object
    if unknown:
        raise UsageError(
            f"not a hook event: unknown key {unknown[0]!r}", hint="its keys: v, event, env"
        )
    return replace(request, owner=owner)


async def answer(handle: HookHandler, request: HookRequest, said: Said) -> bytes:
    """The reply line for ``request``; a notice that a person is asked goes
    through ``said`` first. Never raises but for cancellation: a handler that
    fails or outlasts its deadline is answered with a fallback, as on the socket."""

    async def pending(seconds: float) -> None:
        await said(encode_pending(seconds))

    name = request.name or "an event"
    try:
        async with asyncio.timeout(HANDLER_DEADLINE):
            reply = await handle(replace(request, pending=pending))
    except TimeoutError:
        logger.error("hook handler for %s took over %gs", name, HANDLER_DEADLINE)
        reply = HookReply.fall_back(f"no decision within {HANDLER_DEADLINE:g} s")
    except Exception as exc:  # top-level for this request: the daemon goes on
        logger.exception("hook handler failed on %s", name)
        reply = HookReply.fall_back(f"the daemon's hook handler failed: {type(exc).__name__}")
    return encode_reply(reply)
