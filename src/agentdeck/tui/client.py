"""The TUI's way to the daemon: REST calls and one resumable event stream. No UI here.

Where the daemon is comes from a ``Locator``: the home's ``daemon.json`` and token
(read again at each reconnect, so a restarted daemon on a new port is found), or a
fixed ``--url`` and token for a remote one. ``EventFeed`` holds one SSE connection;
after a drop it reports ``RECONNECTING``, waits a little (growing to a few seconds),
and resumes with ``Last-Event-ID`` so no event is lost or repeated.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from agentdeck.client import locate
from agentdeck.client.http import DaemonHTTP
from agentdeck.errors import AgentdeckError, DaemonUnavailable, UsageError

logger = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 0.2
RETRY_MAX_SECONDS = 3.0
TREE_LIMIT = 10_000  # the API's largest page: the newest 10,000 root agents and their trees


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str


class Locator(Protocol):
    """Where the daemon is now; raises DaemonUnavailable when none runs."""

    def __call__(self) -> Endpoint: ...

    @property
    def where(self) -> str: ...


class HomeLocator:
    """The daemon of a home: ``daemon.json`` and ``token``, read at every call."""

    def __init__(self, home_dir: Path) -> None:
        self.home_dir = home_dir

    @property
    def where(self) -> str:
        return str(self.home_dir)

    def running(self) -> bool:
        return locate.find(self.home_dir) is not None

    def __call__(self) -> Endpoint:
        found = locate.find(self.home_dir)
        if found is None:
            raise DaemonUnavailable(
                f"no agentdeck daemon is running for {self.home_dir}",
                hint="start one with `agentdeck up -d`, or pass --url and --token",
            )
        info, token = found
        if token is None:
            raise DaemonUnavailable(
                f"a daemon runs for {self.home_dir} but its token is missing",
                hint="restart it: `agentdeck down && agentdeck up -d`",
            )
        return Endpoint(info.url, token)


class FixedLocator:
    """A daemon given by address (``--url``, ``--token``)."""

    def __init__(self, url: str, token: str) -> None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--url must be an http(s) URL, not {url!r}")
        if not token:
            raise UsageError("--url needs --token (the token file of the daemon's home)")
        self.endpoint = Endpoint(url.rstrip("/"), token)

    @property
    def where(self) -> str:
        return self.endpoint.url

    def __call__(self) -> Endpoint:
        return self.endpoint


class DeckClient:
    """The REST calls the TUI makes. Each call finds the daemon anew when the
    last one could not reach it (a restart may have moved it)."""

    def __init__(self, locator: Locator) -> None:
        self.locator = locator
        self._endpoint: Endpoint | None = None
        self._http: DaemonHTTP | None = None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def endpoint(self) -> Endpoint:
        return self._endpoint if self._endpoint is not None else self.locator()

    async def _client(self) -> DaemonHTTP:
        endpoint = self.locator()
        if self._http is None or endpoint != self._endpoint:
            await self.aclose()
            self._endpoint = endpoint
            self._http = DaemonHTTP(endpoint.url, endpoint.token, client="tui")
        return self._http

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call (``json=``, ``params=``); a daemon that did not answer is
        looked for anew at the next call (a restart may have moved it)."""
        http = await self._client()
        try:
            return await http.call(method, path, **kwargs)
        except DaemonUnavailable:
            await self.aclose()
            raise

    # -- reads ----------------------------------------------------------------------

    async def tree(self, limit: int = TREE_LIMIT) -> list[dict[str, Any]]:
        agents: list[dict[str, Any]] = (
            await self.call("GET", "/api/tree", params={"limit": limit})
        )["agents"]
        return agents

    async def agent(self, ref: str) -> dict[str, Any]:
        found: dict[str, Any] = await self.call("GET", f"/api/agents/{ref}")
        return found

    async def last_event_id(self) -> int:
        return int((await self.call("GET", "/api/stats"))["last_event_id"])

    async def events(
        self, agent_id: str, *, after: int = 0, before: int | None = None, limit: int = 5000
    ) -> dict[str, Any]:
        """A page of one agent's log: after ``after``, or (with ``before``) the newest
        ``limit`` events before it, whose ``next_before`` leads further back."""
        params: dict[str, Any] = {"agent": agent_id, "limit": limit}
        params.update({"before": before} if before is not None else {"after": after})
        page: dict[str, Any] = await self.call("GET", "/api/events", params=params)
        return page

    async def approvals(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await self.call("GET", "/api/approvals"))["approvals"]
        return found

    async def asks(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await self.call("GET", "/api/asks"))["asks"]
        return found

    # -- steering -------------------------------------------------------------------

    async def send(self, agent_id: str, text: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call(
            "POST", f"/api/agents/{agent_id}/messages", json={"text": text}
        )
        return out

    async def interrupt(self, agent_id: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call("POST", f"/api/agents/{agent_id}/interrupt")
        return out

    async def kill(self, agent_id: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call("POST", f"/api/agents/{agent_id}/kill", json={})
        return out

    async def resume(self, agent_id: str, *, fork: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = await self.call(
            "POST", f"/api/agents/{agent_id}/resume", json={"fork": fork}
        )
        return out

    async def answer_approval(
        self, approval_id: str, decision: str, *, always: bool = False, message: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"decision": decision, "always": always}
        if message:
            body["message"] = message
        out: dict[str, Any] = await self.call("POST", f"/api/approvals/{approval_id}", json=body)
        return out

    async def answer_ask(self, ask_id: str, answer: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call(
            "POST", f"/api/asks/{ask_id}", json={"answer": answer}
        )
        return out

    # -- the command palette's deck commands ---------------------------------------

    async def templates(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await self.call("GET", "/api/templates"))["templates"]
        return found

    async def start(self, template: str, prompt: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call(
            "POST", "/api/agents", json={"prompt": prompt, "agent": template}
        )
        return out

    async def diff(self, agent_id: str) -> dict[str, Any]:
        out: dict[str, Any] = await self.call("GET", f"/api/agents/{agent_id}/diff")
        return out

    async def checkpoints(self, agent_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (
            await self.call("GET", f"/api/agents/{agent_id}/checkpoints")
        )["checkpoints"]
        return found

    async def rewind(self, agent_id: str, to: int) -> dict[str, Any]:
        out: dict[str, Any] = await self.call(
            "POST", f"/api/agents/{agent_id}/rewind", json={"to": to}
        )
        return out

    async def search_memory(self, query: str, limit: int = 20) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (
            await self.call("GET", "/api/memory/search", params={"q": query, "limit": limit})
        )["hits"]
        return found


class FeedState(StrEnum):
    CONNECTING = "connecting"
    LIVE = "live"
    RECONNECTING = "reconnecting"


OnEvent = Callable[[dict[str, Any]], Awaitable[None]]
OnState = Callable[[FeedState, str | None], Awaitable[None]]


class EventFeed:
    """One SSE connection to ``/api/events/stream``, resumed after any drop."""

    def __init__(
        self, locator: Locator, *, after: int, on_event: OnEvent, on_state: OnState
    ) -> None:
        self.locator = locator
        self.position = after
        self.on_event = on_event
        self.on_state = on_state
        self.connections = 0  # how many times a stream was opened (1 = never dropped)

    async def run(self) -> None:
        """Until cancelled: stream, and after a drop reconnect with Last-Event-ID."""
        delay = RETRY_FIRST_SECONDS
        while True:
            opened = self.connections
            try:
                await self._stream()
                problem = "the daemon ended the stream"
            except DaemonUnavailable as exc:
                problem = exc.message
            except (AgentdeckError, ValueError) as exc:
                problem = f"lost the event stream: {exc!r}"
            if self.connections > opened:  # it was live: try again at once
                delay = RETRY_FIRST_SECONDS
                logger.info("event stream: %s; reconnecting", problem)
            await self.on_state(FeedState.RECONNECTING, problem)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def _stream(self) -> None:
        endpoint = self.locator()
        http = DaemonHTTP(endpoint.url, endpoint.token, client="tui")
        try:
            async with http.event_stream(after=self.position) as events:
                self.connections += 1
                await self.on_state(FeedState.LIVE, None)
                async for event in events:
                    if event.kind == "dropped":
                        return  # fell behind: reconnect from our position
                    await self._deliver(event.data)
        finally:
            await http.aclose()

    async def _deliver(self, text: str) -> None:
        event = json.loads(text)
        if not isinstance(event, dict) or not isinstance(event.get("id"), int):
            return
        if event["id"] <= self.position:
            return  # already seen (a resumed stream never repeats, but be sure)
        self.position = event["id"]
        await self.on_event(event)
