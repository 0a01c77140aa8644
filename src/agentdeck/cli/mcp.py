"""``agentdeck mcp``: memory as an MCP server over stdio (for Claude Code sessions).

Register it with Claude Code: ``claude mcp add agentdeck-memory -- agentdeck mcp``.
"""

from __future__ import annotations

import typer

from agentdeck.cli.context import run_async


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp() -> None:
    """Serve memory over stdio as an MCP server: tools memory_search (short index
    entries) and memory_get (whole records). Reads the store directly; logs go to
    stderr, stdout is the protocol."""
    from agentdeck.memory.mcp_server import serve

    run_async(serve)
