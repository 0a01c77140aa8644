"""``POST /api/hooks/event``: the hook socket's protocol over the API, with a token.

A Claude Code session on another machine (or one whose plugin is given the deck's
URL and a token instead of its home) reports its hook events here. The body is the
request line the hook client writes to ``daemon.sock`` (``hooks.protocol``:
``{"v":1,"event":{…},"env":{…}}``), the answer is the socket's lines as NDJSON:
perhaps ``{"pending":true,"wait":S}`` first (a person is asked), then the reply.
The Deck's ``handle_hook`` answers both doors; here the session is recorded as the
token's user's, and another user's session is refused (the bridge's fallback).

Before the handler: 413 for a body over the socket's own limit (by its
Content-Length, or once that much is read, never more), 400 for one the socket
would call malformed (not JSON, no ``event`` object, …) or with a key it does not
know. The handler's deadline and failures answer as the socket does (a fallback).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from agentdeck.daemon.deck import Deck
from agentdeck.web.owners import request_user

router = APIRouter(prefix="/api", tags=["hooks"])

# The hook socket's own limit on a request line (hooks.socket_server.MAX_REQUEST):
# PostToolUse carries the tool's output.
MAX_REQUEST = 64 * 1024 * 1024
NDJSON = "application/x-ndjson"
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["event"],
    "properties": {
        "v": {"type": "integer", "enum": [1], "description": "The protocol's version."},
        "event": {
            "type": "object",
            "description": "The hook's stdin as Claude Code gave it (hook_event_name, "
            "session_id, …).",
        },
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "CLAUDE_PROJECT_DIR, CLAUDE_PID, CLAUDE_CODE_SESSION_ID, "
            "CLAUDE_CODE_ENTRYPOINT as the hook saw them.",
        },
    },
}

Said = Callable[[bytes], Awaitable[None]]


class _TooBig(Exception):
    pass


@router.post(
    "/hooks/event",
    summary="One hook event of a Claude Code session; the hook's answer",
    response_class=StreamingResponse,
    response_model=None,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": EVENT_SCHEMA}},
        },
        "responses": {
            "200": {
                "description": "NDJSON: perhaps {pending, wait} first, then "
                "{exit, stdout, stderr} or {fallback, reason}.",
                "content": {NDJSON: {}},
            },
            "400": {"description": "The body is not a hook event."},
            "413": {"description": "The body is over 64 MiB."},
        },
    },
)
async def hook_event(request: Request) -> Response:
    try:
        body = await _body(request)
    except _TooBig:
        size = MAX_REQUEST // (1024 * 1024)
        return _error(413, f"a hook event holds at most {size} MiB")
    deck: Deck = request.app.state.deck
    exchange = deck.hook_event(body, by=request_user(request))  # UsageError: 400
    return StreamingResponse(_lines(exchange), media_type=NDJSON)


async def _lines(exchange: Callable[[Said], Awaitable[bytes]]) -> AsyncIterator[bytes]:
    """The socket's lines: a pending notice if the handler puts the call to a
    person, then its reply (the exchange never fails: a fallback instead)."""
    said: asyncio.Queue[bytes] = asyncio.Queue()

    async def run() -> None:
        await said.put(await exchange(said.put))

    task = asyncio.get_running_loop().create_task(run(), name="hook-event")
    try:
        while True:
            line = await said.get()
            yield line
            if not line.startswith(b'{"pending"'):
                return
    finally:
        if not task.done():  # the client went away: nobody waits for the answer
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REQUEST:
        raise _TooBig
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST:
            raise _TooBig
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "message": message}}, status_code=status)
