"""``RemoteDeck``'s orchestrator tools for a hand-started session:
``/api/agents/external`` and ``/api/agents/<ref>/deck/<tool>``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentdeck.client.deck.base import RemoteBase, agent_of, api_path, field
from agentdeck.core.agent import Agent

# A wait over HTTP answers within the daemon's cap (300 s, then "still waiting"):
# this leaves it room.
TOOL_CALL_SECONDS = 360.0


class RemoteOrchestration(RemoteBase):
    async def external_agent(self, session_id: str, project: str, pid: int | None = None) -> Agent:
        body = {"session_id": session_id, "project": project, "pid": pid}
        return agent_of(await self.http.call("POST", "/api/agents/external", json=body))

    async def call_deck_tool(self, ref: str, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        answer = await self.http.call(
            "POST",
            api_path("agents", ref, f"deck/{quote(tool, safe='')}"),
            json=args,
            timeout=TOOL_CALL_SECONDS,
        )
        return str(field(answer, "text")), bool(answer.get("is_error"))
