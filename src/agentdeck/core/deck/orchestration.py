"""The Deck interface, orchestrating from outside: a hand-started Claude Code
session (``agentdeck mcp --orchestrate``) acts as an agent of the deck and calls the
orchestrator's tools (spawn, wait, answer...) as that agent."""

from __future__ import annotations

from typing import Any, Protocol

from agentdeck.core.agent import Agent


class OrchestrationOps(Protocol):
    """The deck's orchestrator tools for a session agentdeck did not start."""

    async def external_agent(self, session_id: str, project: str, pid: int | None = None) -> Agent:
        """The agent standing for the Claude Code session ``session_id`` (made on
        first use, the same one ever after): the parent of what it spawns."""
        ...

    async def call_deck_tool(self, ref: str, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        """One orchestrator tool call (``spawn_agent``, ``wait_for_agents``, ...) as
        the external agent ``ref``: its text, and whether it failed. ``NotFound`` for
        an unknown tool; ``UsageError`` for an agent agentdeck runs (its tools are in
        its own process, scoped to it)."""
        ...
