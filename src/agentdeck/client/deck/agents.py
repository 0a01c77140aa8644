"""``RemoteDeck``'s agents: ``/api/agents``."""

from __future__ import annotations

import base64
from typing import Any

from agentdeck.client.deck.base import (
    AGENT_PAGE,
    RemoteBase,
    agent_of,
    api_path,
    create_body,
    field,
)
from agentdeck.core.agent import Agent, AgentSpec, AgentState


class RemoteAgents(RemoteBase):
    async def create_agent(
        self, spec: AgentSpec, *, keep_alive: bool = True, template: str | None = None
    ) -> Agent:
        body = create_body(spec, keep_alive=keep_alive, template=template)
        return agent_of(await self.http.call("POST", "/api/agents", json=body))

    async def list_agents(
        self,
        *,
        states: list[AgentState] | None = None,
        text: str | None = None,
        include_archived: bool = False,
        limit: int = 100,
        offset: int = 0,
        parent: str | None = None,
        roots: bool = False,
    ) -> list[Agent]:
        params: dict[str, Any] = {"archived": include_archived, "roots": roots}
        if states:
            params["state"] = [str(s) for s in states]
        if text:
            params["q"] = text
        if parent:
            params["parent"] = parent
        found: list[Agent] = []
        while len(found) < limit:
            page = min(limit - len(found), AGENT_PAGE)
            answer = await self.http.call(
                "GET", "/api/agents", params={**params, "limit": page, "offset": offset}
            )
            found += [agent_of(a) for a in field(answer, "agents")]
            if answer.get("next_offset") is None:
                break
            offset = answer["next_offset"]
        return found

    async def tree(
        self, *, text: str | None = None, include_archived: bool = False, limit: int = 100
    ) -> list[Agent]:
        params: dict[str, Any] = {"archived": include_archived}
        if text:
            params["q"] = text
        found: list[Agent] = []
        offset = 0
        while True:  # a page of roots at a time, each with everything below it
            page = min(limit - offset, AGENT_PAGE)
            answer = await self.http.call(
                "GET", "/api/tree", params={**params, "limit": page, "offset": offset}
            )
            found += [agent_of(a) for a in field(answer, "agents")]
            if answer.get("next_offset") is None or answer["next_offset"] >= limit:
                return found
            offset = answer["next_offset"]

    async def get_agent(self, ref: str) -> Agent:
        return agent_of(await self.http.call("GET", api_path("agents", ref)))

    async def send(self, ref: str, text: str) -> Agent:
        answer = await self.http.call(
            "POST", api_path("agents", ref, "messages"), json={"text": text}
        )
        return agent_of(answer)

    async def compact(self, ref: str, instructions: str | None = None) -> Agent:
        body = {"instructions": instructions}
        return agent_of(await self.http.call("POST", api_path("agents", ref, "compact"), json=body))

    async def interrupt(self, ref: str) -> Agent:
        return agent_of(await self.http.call("POST", api_path("agents", ref, "interrupt")))

    async def kill(self, ref: str, *, children: bool = True) -> Agent:
        body = {"children": children}
        return agent_of(await self.http.call("POST", api_path("agents", ref, "kill"), json=body))

    async def resume(self, ref: str, text: str | None = None, *, fork: bool = False) -> Agent:
        body = {"text": text, "fork": fork}
        return agent_of(await self.http.call("POST", api_path("agents", ref, "resume"), json=body))

    async def archive(self, ref: str, archived: bool = True) -> Agent:
        body = {"archived": archived}
        return agent_of(await self.http.call("POST", api_path("agents", ref, "archive"), json=body))

    async def upload(self, ref: str, name: str, data: bytes) -> str:
        body = {"name": name, "content_base64": base64.b64encode(data).decode()}
        saved = await self.http.call("POST", api_path("agents", ref, "files"), json=body)
        return str(field(saved, "path"))
