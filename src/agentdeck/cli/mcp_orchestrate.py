"""``agentdeck mcp --orchestrate``: the deck's orchestrator tools for any Claude Code.

Register it with ``claude mcp add agentdeck -- agentdeck mcp --orchestrate``; the
session can then spawn deck agents, wait for them and answer their questions
(``mcp__agentdeck__spawn_agent`` …). Every call goes through the running daemon's
Deck (``RemoteDeck``, from ``cli.decks.daemon_deck``) as the hand-started
session's own agent (source ``external``, found by the Claude Code session id the
server is started with, or made): its children appear on the board under it, and
the tree's limits apply as to any orchestrator.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from agentdeck.errors import AgentdeckError
from agentdeck.orchestration.tools import SCHEMAS
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

    from agentdeck.client.deck import RemoteDeck

logger = logging.getLogger(__name__)


class DeckLink:
    """The daemon's deck and the agent to act as, found on first use (the daemon may
    start after Claude Code started this server)."""

    def __init__(self, settings: Settings, session_id: str, project: str) -> None:
        self.settings = settings
        self.session_id = session_id
        self.project = project
        self.deck: RemoteDeck | None = None
        self.agent_id: str | None = None
        self._lock = asyncio.Lock()

    async def call(self, tool: str, args: dict[str, Any]) -> str:
        from agentdeck.memory.mcp_server import tool_error

        try:
            deck, agent_id = await self._linked()
            text, failed = await deck.call_deck_tool(
                agent_id, tool, {k: v for k, v in args.items() if v is not None}
            )
        except AgentdeckError as exc:
            await self.close()  # the next call finds the daemon afresh
            raise tool_error(str(exc)) from None
        if failed:
            raise tool_error(text)
        return text

    async def _linked(self) -> tuple[RemoteDeck, str]:
        async with self._lock:  # tool calls may come at once; one link for them all
            return await self._link()

    async def _link(self) -> tuple[RemoteDeck, str]:
        from agentdeck.cli.decks import daemon_deck

        if self.deck is None:
            self.deck = await daemon_deck(self.settings)
        if self.agent_id is None:
            if not self.session_id:
                raise AgentdeckError(
                    "this server does not know its Claude Code session: start it from Claude "
                    "Code (which sets CLAUDE_CODE_SESSION_ID) or pass --session-id"
                )
            agent = await self.deck.external_agent(self.session_id, self.project, os.getppid())
            self.agent_id = agent.id
        return self.deck, self.agent_id

    async def close(self) -> None:
        if self.deck is not None:
            await self.deck.aclose()
        self.deck = None


def add_orchestrator_tools(server: FastMCP, link: DeckLink) -> None:
    """The orchestrator's tools, each a call to the daemon as the session's agent."""

    def described(name: str) -> dict[str, Any]:
        return {"name": name, "description": SCHEMAS[name][0], "structured_output": False}

    @server.tool(**described("spawn_agent"))
    async def spawn_agent(
        prompt: str,
        template: str = "engineer",
        name: str | None = None,
        workspace: str = "new",
        budget_usd: float | None = None,
    ) -> str:
        args = {
            "prompt": prompt,
            "template": template,
            "name": name,
            "workspace": workspace,
            "budget_usd": budget_usd,
        }
        return await link.call("spawn_agent", args)

    @server.tool(**described("list_agents"))
    async def list_agents() -> str:
        return await link.call("list_agents", {})

    @server.tool(**described("read_transcript"))
    async def read_transcript(agent: str, since: int = 0, limit: int = 50) -> str:
        return await link.call("read_transcript", {"agent": agent, "since": since, "limit": limit})

    @server.tool(**described("send_to_agent"))
    async def send_to_agent(agent: str, text: str) -> str:
        return await link.call("send_to_agent", {"agent": agent, "text": text})

    @server.tool(**described("wait_for_agents"))
    async def wait_for_agents(
        agents: list[str] | None = None, timeout_seconds: float = 600, mode: str = "all"
    ) -> str:
        args = {"agents": agents or [], "timeout_seconds": timeout_seconds, "mode": mode}
        return await link.call("wait_for_agents", args)

    @server.tool(**described("interrupt_agent"))
    async def interrupt_agent(agent: str) -> str:
        return await link.call("interrupt_agent", {"agent": agent})

    @server.tool(**described("kill_agent"))
    async def kill_agent(agent: str) -> str:
        return await link.call("kill_agent", {"agent": agent})

    @server.tool(**described("answer_request"))
    async def answer_request(request_id: str, answer: str) -> str:
        return await link.call("answer_request", {"request_id": request_id, "answer": answer})

    @server.tool(**described("diff_agent"))
    async def diff_agent(agent: str) -> str:
        return await link.call("diff_agent", {"agent": agent})

    @server.tool(**described("merge_agent"))
    async def merge_agent(agent: str) -> str:  # its test is the repository's, never a model's
        return await link.call("merge_agent", {"agent": agent})


async def serve(settings: Settings, *, session_id: str, project: str) -> None:
    """Memory and the orchestrator's tools over stdio, until the client closes stdin.
    Memory is the deck's ``cli.decks`` gives now; the tools find the daemon on first
    use."""
    from agentdeck.cli.decks import opened_deck
    from agentdeck.memory.mcp_server import build_server

    link = DeckLink(settings, session_id, project)
    try:
        async with opened_deck(settings) as deck:
            server = build_server(deck)
            add_orchestrator_tools(server, link)
            await server.run_stdio_async()
    finally:
        await link.close()
