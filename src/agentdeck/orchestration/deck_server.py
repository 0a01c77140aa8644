"""The ``deck`` MCP server as Claude Code's command line names it.

Its tools are in-process (``tools``): the command line names the server and its
timeout only, and the tools come with ``initialize``. So an embedded run can
spawn Claude Code (``cli.early``) before the SDK's MCP machinery is imported.
"""

from __future__ import annotations

from typing import Any

from agentdeck.settings import Settings

SERVER = "deck"


def spawn_config(settings: Settings) -> dict[str, Any]:
    """The server's config without its instance: what the command line says of it."""
    timeout_ms = int(settings.deck_tool_timeout_seconds * 1000)
    return {"type": "sdk", "name": SERVER, "timeout": timeout_ms}
