"""The bridge's way to the daemon: its REST API and its event stream, nothing else.

A bridge is a client like the CLI and the dashboard: it never opens the store or
drives the runner. It says who it is (``X-Agentdeck-Client: bridge``) and, for an
answer given in chat, who gave it (``X-Agentdeck-Actor``), so the audit log names
the chat member. The stream is resumed with ``Last-Event-ID`` after any drop.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agentdeck.client import locate
from agentdeck.client.http import DaemonHTTP
from agentdeck.core.event_types import StoredEvent
from agentdeck.errors import ConfigError, DaemonUnavailable

logger = logging.getLogger(__name__)

RECONNECT_SECONDS = 1.0
REQUEST_SECONDS = 60.0
CONNECT_SECONDS = 5.0


@dataclass(frozen=True)
class Actor:
    """A chat member, as the platform names them."""

    platform: str
    id: str
    name: str
    roles: frozenset[str] = frozenset()

    @property
    def tag(self) -> str:
        """How the audit log names them: ``discord:1234:alice``."""
        name = "".join(c for c in self.name if c.isprintable() and c not in ":\r\n")[:64]
        return f"{self.platform}:{self.id}:{name or self.id}"


class DaemonClient:
    def __init__(self, url: str, token: str) -> None:
        self._api = DaemonHTTP(
            url,
            token,
            client="bridge",
            read_seconds=REQUEST_SECONDS,
            connect_seconds=CONNECT_SECONDS,
        )
        self.url = self._api.url

    @classmethod
    def for_home(cls, home: Any) -> DaemonClient:
        """The running daemon of a home (an object with ``home_dir``)."""
        found = locate.recorded(home.home_dir)
        if found is None:
            raise ConfigError(
                f"no agentdeck daemon runs for {home.home_dir}",
                hint="start it first: `agentdeck up`",
            )
        info, token = found
        return cls(info.url, token)

    async def close(self) -> None:
        await self._api.aclose()

    # -- calls --------------------------------------------------------------------

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        actor: Actor | str | None = None,
        **params: Any,
    ) -> Any:
        """One API call; ``actor`` (a member, or a member's tag) names who asked for
        it, so the daemon's audit log does."""
        tag = actor.tag if isinstance(actor, Actor) else actor
        return await self._api.call(
            method,
            path,
            json=body,
            params={k: v for k, v in params.items() if v is not None},
            headers={"X-Agentdeck-Actor": tag} if tag else None,
        )

    async def create_agent(self, body: dict[str, Any], *, actor: Actor) -> dict[str, Any]:
        data: dict[str, Any] = await self.call("POST", "/api/agents", body=body, actor=actor)
        return data

    async def agent(self, ref: str) -> dict[str, Any]:
        data: dict[str, Any] = await self.call("GET", f"/api/agents/{ref}")
        return data

    async def send(self, ref: str, text: str, *, actor: Actor | str) -> dict[str, Any]:
        data: dict[str, Any] = await self.call(
            "POST", f"/api/agents/{ref}/messages", body={"text": text}, actor=actor
        )
        return data

    async def upload(self, ref: str, name: str, data: bytes, *, actor: Actor) -> str:
        """Save a file under ``uploads/`` in the agent's workspace; its path there."""
        body = {"name": name, "content_base64": base64.b64encode(data).decode()}
        saved = await self.call("POST", f"/api/agents/{ref}/files", body=body, actor=actor)
        return str(saved["path"])

    async def interrupt(self, ref: str, *, actor: Actor) -> dict[str, Any]:
        data: dict[str, Any] = await self.call(
            "POST", f"/api/agents/{ref}/interrupt", body={}, actor=actor
        )
        return data

    async def answer_approval(
        self, ref: str, decision: str, *, actor: Actor, always: bool, message: str | None
    ) -> dict[str, Any]:
        # "Always" is for this agent (its session), never every agent of its profile.
        body: dict[str, Any] = {"decision": decision, "always": always}
        if always:
            body["scope"] = "session"
        if message:
            body["message"] = message
        data: dict[str, Any] = await self.call(
            "POST", f"/api/approvals/{ref}", body=body, actor=actor
        )
        return data

    async def answer_ask(self, ref: str, answer: str, *, actor: Actor) -> dict[str, Any]:
        data: dict[str, Any] = await self.call(
            "POST", f"/api/asks/{ref}", body={"answer": answer}, actor=actor
        )
        return data

    # -- the event stream ------------------------------------------------------------

    async def events(self, *, after: int, agent: str | None = None) -> AsyncIterator[StoredEvent]:
        """Events after ``after`` (of one agent, or all), for ever: a broken or
        dropped stream is reopened where it stopped."""
        position = after
        while True:
            try:
                async for event in self._stream(position, agent):
                    position = event.id
                    yield event
            except DaemonUnavailable as exc:
                logger.info("event stream broke at %d (%r); reconnecting", position, exc)
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _stream(self, after: int, agent: str | None) -> AsyncIterator[StoredEvent]:
        params = {"agent": agent} if agent else {}
        async with self._api.event_stream(after=after, params=params, read_seconds=None) as events:
            async for event in events:
                if event.kind == "dropped":
                    continue
                raw = json.loads(event.data)
                yield StoredEvent(
                    id=int(raw["id"]),
                    agent_id=raw["agent_id"],
                    type=raw["type"],
                    ts=float(raw["ts"]),
                    data=raw.get("data") or {},
                )
