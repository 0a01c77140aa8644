"""The CLI's asynchronous way to a running daemon: HTTP (httpx) with the home's token.

For the commands that live in an event loop (merges, worktrees, the orchestrator's
MCP server); the steering commands take ``wire``'s quicker path.

``connect(settings)`` finds the daemon of this home, or returns None when there
is none (then commands run embedded). A daemon that holds the home but does not
answer is an error, not a reason to run a second supervisor beside it.
"""

from __future__ import annotations

from typing import Any

import httpx

from agentdeck.cli import wire
from agentdeck.cli.wire import error_from
from agentdeck.core.agent import Agent
from agentdeck.daemon.home import DaemonInfo
from agentdeck.errors import AgentdeckError
from agentdeck.settings import Settings

_TIMEOUT = httpx.Timeout(30.0, connect=3.0)


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
            raise error_from(response.status_code, response.content, path)
        return response.json()

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Any API call; errors become AgentdeckErrors with the daemon's message."""
        return await self._call(method, path, **kwargs)

    async def healthz(self) -> dict[str, Any]:
        # Short: a daemon that cannot answer this quickly is hung.
        data: dict[str, Any] = await self._call("GET", "/healthz", timeout=5.0)
        return data

    async def get_agent(self, ref: str) -> Agent:
        return Agent.from_dict(await self._call("GET", f"/api/agents/{ref}"))

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


async def connect(settings: Settings) -> DaemonClient | None:
    """The daemon of this home, or None if none runs; checked to answer."""
    found = wire.connect(settings.home_dir)
    if found is None:
        return None
    client = DaemonClient(found.info, found.token)
    try:
        await client.healthz()
    except BaseException:
        await client.aclose()
        raise
    return client
