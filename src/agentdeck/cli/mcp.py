"""``agentdeck mcp``: memory (and, with ``--orchestrate``, the deck's orchestrator
tools) as an MCP server over stdio, for Claude Code sessions.

Register it with Claude Code: ``claude mcp add agentdeck -- agentdeck mcp --orchestrate``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli.context import run_async
from agentdeck.settings import Settings


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    orchestrate: Annotated[
        bool,
        typer.Option(
            "--orchestrate",
            help="Also offer the orchestrator's tools (spawn_agent, wait_for_agents, "
            "answer_request, …) through the running daemon: the session's children run on "
            "the deck and show on its board under the session.",
        ),
    ] = False,
    session_id: Annotated[
        str,
        typer.Option(
            envvar="CLAUDE_CODE_SESSION_ID",
            help="The Claude Code session this serves (Claude Code sets it).",
        ),
    ] = "",
    project: Annotated[
        str,
        typer.Option(
            envvar="CLAUDE_PROJECT_DIR",
            help="The session's project directory (Claude Code sets it).",
        ),
    ] = "",
) -> None:
    """Serve memory over stdio as an MCP server: tools memory_search (short index
    entries) and memory_get (whole records). Reads through the running daemon, or
    the deck opened in this process when none runs; logs go to stderr, stdout is
    the protocol."""
    if not orchestrate:
        run_async(serve_memory)
        return

    async def go(settings: Settings) -> None:
        from agentdeck.cli.mcp_orchestrate import serve as serve_orchestrate

        await serve_orchestrate(settings, session_id=session_id, project=project)

    run_async(go)


async def serve_memory(settings: Settings) -> None:
    """Memory over stdin/stdout, on the deck ``cli.decks`` gives, until the client
    closes stdin."""
    from agentdeck.cli.decks import opened_deck
    from agentdeck.memory.mcp_server import build_server

    async with opened_deck(settings) as deck:
        await build_server(deck).run_stdio_async()
