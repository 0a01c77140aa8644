"""A small SSE reader for tests: messages (and comments) off an httpx stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Message:
    """One SSE message; a comment line (``: ping``) comes as ``comment``."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
    comment: str | None = None
    fields: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.data)


async def messages(response: httpx.Response) -> AsyncIterator[Message]:
    """Parse ``text/event-stream`` as the HTML spec says (the subset we send)."""
    current = Message()
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if current.fields:
                current.data = "\n".join(data)
                yield current
            current, data = Message(), []
            continue
        if line.startswith(":"):
            yield Message(comment=line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        current.fields.append(name)
        if name == "data":
            data.append(value)
        elif name == "event":
            current.event = value
        elif name == "id":
            current.id = value
        elif name == "retry":
            current.retry = int(value)


def stream_request(
    client: httpx.AsyncClient, params: dict[str, Any] | None = None, **headers: str
) -> Any:
    """``client.stream`` on /api/events/stream without a read timeout."""
    return client.stream(
        "GET",
        "/api/events/stream",
        params=params,
        headers={k.replace("_", "-"): v for k, v in headers.items()},
        timeout=httpx.Timeout(30.0, read=None),
    )
