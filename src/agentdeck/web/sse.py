"""Server-sent events: ``GET /api/events/stream``.

Each event goes out as ``id: <event id>`` / ``event: <type>`` /
``data: <StoredEvent.to_dict() as JSON>``. A client resumes without loss by
reconnecting with ``Last-Event-ID`` (browsers do it by themselves; ``retry:``
tells them how soon); without it the stream starts at the live position.
Silence is broken by ``: ping`` comments every ``heartbeat`` seconds.

With ``partial=true`` the stream also carries the assistant's text as it is
written: ``event: partial`` / ``data: <core.partial.PartialText as JSON>``, at
most ten a second per agent, between the events. They have no ``id:`` (nothing
is stored: a reconnecting client resumes after the last event, and sees the text
whole in its ``assistant_text``); a client that does not know the name ignores
it (``EventSource.onmessage`` never sees a named event).

A client that reads too slowly is dropped by the hub instead of slowing the
others: it gets ``event: dropped`` with the position to resume from, and the
response ends. ``close_streams(app)`` ends every stream at shutdown (uvicorn
waits for open responses before it stops).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from typing import Annotated, cast

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import errors

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0  # app.state.sse_heartbeat overrides it
RETRY_MS = 2000  # how long a browser waits before it reconnects
FINAL_SEND_SECONDS = 1.0  # closing words to a client that may no longer read

router = APIRouter(prefix="/api", tags=["events"], responses=errors(400, 404))


class EventStreams:
    """The app's open streams, an encoding cache they share, and the shutdown switch."""

    def __init__(self, cache_size: int = 8192) -> None:
        self.closing = asyncio.Event()
        self.open = 0
        self.dropped = 0
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_size = cache_size

    def encode(self, events: Sequence[StoredEvent | PartialText]) -> bytes:
        """SSE messages for ``events``; each is serialised once for all clients."""
        parts = []
        for event in events:
            if isinstance(event, PartialText):
                parts.append(encode_partial(event))
                continue
            chunk = self._cache.get(event.id)
            if chunk is None:
                chunk = encode_event(event)
                self._cache[event.id] = chunk
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            parts.append(chunk)
        return b"".join(parts)


def encode_event(event: StoredEvent) -> bytes:
    data = json.dumps(event.to_dict(), separators=(",", ":"), ensure_ascii=False)
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n".encode()


def encode_partial(edit: PartialText) -> bytes:
    data = json.dumps(edit.to_dict(), separators=(",", ":"), ensure_ascii=False)
    return f"event: {PartialText.type}\ndata: {data}\n\n".encode()


def event_streams(state: object) -> EventStreams:
    """The ``EventStreams`` of an app (``app.state``), created on first use."""
    streams: EventStreams | None = getattr(state, "sse_streams", None)
    if streams is None:
        streams = EventStreams()
        setattr(state, "sse_streams", streams)  # noqa: B010 - app.state is dynamic
    return streams


def close_streams(state: object) -> None:
    """End every open stream (call it when the server starts shutting down)."""
    event_streams(state).closing.set()


class EventStreamResponse(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        deck: Deck,
        streams: EventStreams,
        *,
        after: int,
        agent_id: str | None,
        heartbeat: float,
        partial: bool = False,
    ) -> None:
        self.status_code = 200
        self.partial = partial
        self.background = None
        self.deck = deck
        self.streams = streams
        self.after = after
        self.agent_id = agent_id
        self.heartbeat = heartbeat
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # no buffering in a reverse proxy
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        self.streams.open += 1
        tasks = [
            asyncio.create_task(self._pump(send), name="sse-pump"),
            asyncio.create_task(_disconnected(receive), name="sse-disconnect"),
            asyncio.create_task(self.streams.closing.wait(), name="sse-closing"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.streams.open -= 1
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if tasks[0] in done:
            tasks[0].result()  # a failure of the pump is a server error
        elif tasks[2] in done:  # shutdown: end the response so uvicorn can stop
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FINAL_SEND_SECONDS):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump(self, send: Send) -> None:
        async def write(chunk: bytes) -> None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        await write(f"retry: {RETRY_MS}\n\n".encode())
        follow = self.deck.follow_partial if self.partial else self.deck.follow
        stream = cast(
            AsyncGenerator[list[StoredEvent | PartialText], None],
            follow(after=self.after, agent_id=self.agent_id, heartbeat=self.heartbeat),
        )
        try:
            async with contextlib.aclosing(stream):
                async for batch in stream:
                    await write(self.streams.encode(batch) if batch else b": ping\n\n")
        except SubscriptionDropped as exc:
            self.streams.dropped += 1
            logger.info("event stream too slow; dropped at event %d", exc.position)
            data = json.dumps(
                {
                    "position": exc.position,
                    "message": "this client fell behind; reconnect with "
                    f"Last-Event-ID: {exc.position} to resume",
                }
            )
            await write(f"event: dropped\ndata: {data}\n\n".encode())
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


@router.get(
    "/events/stream",
    response_class=EventStreamResponse,
    status_code=200,
    summary="Live events as server-sent events (resumable with Last-Event-ID)",
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "An endless event stream"}
    },
)
async def stream(
    request: Request,
    after: Annotated[
        int | None, Query(ge=0, description="Start after this id (default: live only).")
    ] = None,
    agent: Annotated[str | None, Query(description="Only this agent's events.")] = None,
    last_event_id: Annotated[
        int | None,
        Header(alias="last-event-id", ge=0, description="Resume after this id; wins over after."),
    ] = None,
    partial: Annotated[
        bool,
        Query(
            description="Also the assistant's text as it is written (`event: partial`, "
            "no id, never stored), at most ten a second per agent."
        ),
    ] = False,
) -> EventStreamResponse:
    deck: Deck = request.app.state.deck
    agent_id = (await deck.get_agent(agent)).id if agent else None
    start = last_event_id if last_event_id is not None else after
    if start is None:
        # Live only: after everything committed so far (the hub may not have
        # fanned out the latest commit yet).
        start = max(deck.event_position, await deck.last_event_id())
    return EventStreamResponse(
        deck,
        event_streams(request.app.state),
        after=start,
        agent_id=agent_id,
        heartbeat=float(getattr(request.app.state, "sse_heartbeat", HEARTBEAT_SECONDS)),
        partial=partial,
    )
