"""The seam through which orchestration extends the agents the runner starts.

The runner knows nothing of orchestration (which itself drives the runner): it
asks its ``extension``, if it has one, for the MCP servers and environment of
each agent's Claude Code process, for the agent's place in its tree's budget,
and lets it add what waits for the agent (notes from its children) to the next
message it is sent.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentdeck.core.agent import Agent
from agentdeck.core.ask_choices import ChoiceQuestion
from agentdeck.core.asks import Ask
from agentdeck.core.guardrails import SharedBudget


class SessionExtension(Protocol):
    def mcp_servers(self, agent: Agent) -> dict[str, Any]:
        """In-process MCP servers for the agent (``ClaudeAgentOptions.mcp_servers``)."""
        ...

    def env(self, agent: Agent) -> dict[str, str]:
        """Environment variables for its Claude Code process."""
        ...

    async def budget(self, agent: Agent) -> SharedBudget | None:
        """Its place in its tree's budget, charged with each cost increase."""
        ...

    async def before_send(self, agent: Agent, text: str) -> str:
        """The user message as it is sent (with what waited for the agent)."""
        ...

    async def ask_user(self, agent: Agent, questions: tuple[ChoiceQuestion, ...]) -> Ask:
        """Put the agent's multiple-choice questions (``AskUserQuestion``) to a
        person in the Asks inbox; the question once answered, expired or cancelled."""
        ...
