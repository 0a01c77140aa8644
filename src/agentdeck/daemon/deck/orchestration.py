"""The Deck's orchestrator tools for a hand-started Claude Code session
(``agentdeck mcp --orchestrate``): its agent, and one tool call as that agent."""

from __future__ import annotations

from typing import Any

from agentdeck.core.agent import Agent, AgentSource
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import NotFound, UsageError


class Orchestration(DeckParts):
    async def external_agent(self, session_id: str, project: str, pid: int | None = None) -> Agent:
        """The agent of a hand-started Claude Code session (made if new)."""
        return await self._orchestration.external_parent(session_id, project, pid)

    @staticmethod
    def deck_tools() -> tuple[str, ...]:
        """The orchestrator tools a hand-started session calls through the API."""
        from agentdeck.orchestration.tools import ORCHESTRATOR_TOOLS

        return tuple(ORCHESTRATOR_TOOLS)

    async def call_deck_tool(
        self, ref: str, tool: str, args: dict[str, Any], *, wait_cap: float | None = None
    ) -> tuple[str, bool]:
        """One orchestrator tool call as the external agent ``ref``: its text, and
        whether it failed. ``wait_cap`` bounds a ``wait_for_agents`` (the API's
        caller repeats a "still waiting" answer)."""
        from agentdeck.orchestration.tools import call_tool

        agent = await self._store.find_agent(ref)
        if agent.source is not AgentSource.EXTERNAL:
            # agentdeck's own agents have the tools in their own process, scoped to them.
            raise UsageError(
                f"{agent.id} is run by agentdeck: only a hand-started session "
                "(POST /api/agents/external) uses the deck's tools through the API"
            )
        tools = self.deck_tools()
        if tool not in tools:
            raise NotFound("deck tool", tool, hint=f"tools: {', '.join(tools)}")
        return await call_tool(self._orchestration, agent.id, tool, args, wait_cap=wait_cap)
