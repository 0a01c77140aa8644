"""The CLI's way to a running daemon: HTTP with the home's token.

``connect(settings)`` finds the daemon of this home, or returns None when there
is none (then commands run embedded). A daemon that holds the home but does not
answer is an error, not a reason to run a second supervisor beside it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import StoredEvent
from agentdeck.daemon.home import DaemonInfo, DaemonLock, read_info, read_token
from agentdeck.errors import AgentdeckError, NotFound, UsageError
from agentdeck.settings import Settings

_TIMEOUT = httpx.Timeout(30.0, connect=3.0)
# Spec fields the daemon fills from a template, never sent by a client.
_RESOLVED_FROM_TEMPLATES = frozenset({"template", "tools", "orchestrator"})


def agent_from_json(data: dict[str, Any]) -> Agent:
    return Agent(
        id=data["id"],
        name=data["name"],
        state=AgentState(data["state"]),
        spec=AgentSpec.from_dict(data.get("spec") or {}),
        cwd=data.get("cwd", ""),
        created_at=data.get("created_at", 0.0),
        updated_at=data.get("updated_at", 0.0),
        source=AgentSource(data.get("source", "agentdeck")),
        session_id=data.get("session_id"),
        cost_usd=data.get("cost_usd", 0.0),
        input_tokens=data.get("input_tokens", 0),
        output_tokens=data.get("output_tokens", 0),
        turns=data.get("turns", 0),
        current_tool=data.get("current_tool"),
        last_error=data.get("last_error"),
        pid=data.get("pid"),
        owner_pid=data.get("owner_pid"),
        parent_id=data.get("parent_id"),
        extra=data.get("extra") or {},
    )


def event_from_json(data: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        id=int(data["id"]),
        agent_id=data["agent_id"],
        type=data["type"],
        ts=float(data["ts"]),
        data=data.get("data") or {},
    )


class DaemonClient:
    def __init__(self, info: DaemonInfo, token: str) -> None:
        self.info = info
        self.http = httpx.AsyncClient(
            base_url=info.url,
            timeout=_TIMEOUT,
            headers={"Authorization": f"Bearer {token}", "X-Agentdeck-Client": "cli"},
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise AgentdeckError(
                f"the agentdeck daemon at {self.info.url} did not answer: {exc!r}",
                hint="`agentdeck status` checks it; `agentdeck down` stops it",
            ) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response.json()

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Any API call; errors become AgentdeckErrors with the daemon's message."""
        return await self._call(method, path, **kwargs)

    async def healthz(self) -> dict[str, Any]:
        # Short: a daemon that cannot answer this quickly is hung.
        data: dict[str, Any] = await self._call("GET", "/healthz", timeout=5.0)
        return data

    async def stats(self) -> dict[str, Any]:
        data: dict[str, Any] = await self._call("GET", "/api/stats")
        return data

    async def list_agents(self, *, states: list[AgentState] | None, limit: int) -> list[Agent]:
        params: list[tuple[str, str | int]] = [("limit", limit)]
        params += [("state", str(s)) for s in states or []]
        data = await self._call("GET", "/api/agents", params=params)
        return [agent_from_json(a) for a in data["agents"]]

    async def get_agent(self, ref: str) -> Agent:
        return agent_from_json(await self._call("GET", f"/api/agents/{ref}"))

    async def tree(self, *, limit: int) -> list[Agent]:
        data = await self._call("GET", "/api/tree", params={"limit": limit})
        return [agent_from_json(a) for a in data["agents"]]

    async def children(self, agent_id: str) -> list[Agent]:
        data = await self._call("GET", "/api/agents", params={"parent": agent_id, "limit": 10_000})
        return [agent_from_json(a) for a in data["agents"]]

    async def create_agent(
        self, spec: AgentSpec, *, keep_alive: bool, template: str | None = None
    ) -> Agent:
        fields = set(AgentSpec.__dataclass_fields__) - _RESOLVED_FROM_TEMPLATES
        body = {k: v for k, v in spec.to_dict().items() if v is not None and k in fields}
        body["keep_alive"] = keep_alive
        if template:
            body["agent"] = template
        return agent_from_json(await self._call("POST", "/api/agents", json=body))

    async def merge(
        self, ref: str, *, into: str | None, strategy: str, test: str | None, wait: bool = True
    ) -> dict[str, Any]:
        body = {"into": into, "strategy": strategy, "test": test}
        outcome: dict[str, Any] = await self._call(
            "POST", f"/api/agents/{ref}/merge", json=body, params={"wait": wait},
            # A merge waits for its turn in the queue and for its tests: no read limit.
            timeout=httpx.Timeout(None, connect=3.0) if wait else _TIMEOUT,
        )  # fmt: skip
        return outcome

    async def act(self, ref: str, action: str, body: dict[str, Any] | None = None) -> Agent:
        return agent_from_json(
            await self._call("POST", f"/api/agents/{ref}/{action}", json=body or {})
        )

    async def events(
        self, *, agent_id: str, after: int = 0, limit: int = 1000
    ) -> list[StoredEvent]:
        data = await self._call(
            "GET", "/api/events", params={"agent": agent_id, "after": after, "limit": limit}
        )
        return [event_from_json(e) for e in data["events"]]

    async def stream(self, *, agent_id: str, after: int) -> AsyncIterator[StoredEvent]:
        """Events of one agent after ``after``, live, until the caller stops.

        When the daemon drops us for reading too slowly, reconnect from the
        position it reached: nothing is lost or repeated.
        """
        while True:
            position = None
            async for kind, data in self._sse(agent_id, after):
                if kind == "dropped":
                    position = int(json.loads(data)["position"])
                    break
                event = event_from_json(json.loads(data))
                after = event.id
                yield event
            if position is None:
                return  # the daemon ended the stream (shutting down)
            after = max(after, position)

    async def _sse(self, agent_id: str, after: int) -> AsyncIterator[tuple[str, str]]:
        params: dict[str, str | int] = {"agent": agent_id, "after": after}
        try:
            async with self.http.stream(
                "GET", "/api/events/stream", params=params, timeout=httpx.Timeout(None, connect=3.0)
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error(response)
                kind, data = "message", []
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif not line:
                        if data:
                            yield kind, "\n".join(data)
                        kind, data = "message", []
        except httpx.HTTPError as exc:
            raise AgentdeckError(f"lost the daemon's event stream: {exc!r}") from exc


def _error(response: httpx.Response) -> AgentdeckError:
    try:
        body = response.json()["error"]
        message, hint = str(body["message"]), body.get("hint")
    except (ValueError, KeyError, TypeError):
        message, hint = f"daemon answered {response.status_code}", None
    if response.status_code == 404:
        err: AgentdeckError = NotFound("agent", "?", hint=hint)
        err.message = message
        return err
    if response.status_code in (400, 422):
        return UsageError(message, hint=hint)
    return AgentdeckError(message, hint=hint)


async def connect(settings: Settings) -> DaemonClient | None:
    """The daemon of this home, or None if none runs."""
    info = read_info(settings)
    if info is None or not DaemonLock(settings).held_elsewhere():
        return None
    token = read_token(settings)
    if token is None:
        raise AgentdeckError(
            f"a daemon runs for {settings.home_dir} but its token is missing",
            hint="restart it: `agentdeck down && agentdeck up`",
        )
    client = DaemonClient(info, token)
    try:
        await client.healthz()
    except BaseException:
        await client.aclose()
        raise
    return client
