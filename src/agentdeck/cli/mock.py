"""``agentdeck mock-model``: the scripted Anthropic Messages API server."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("mock-model")(mock_model)


def mock_model(
    scenario: Annotated[
        list[str],
        typer.Option("--scenario", help="Scenario name or YAML file; repeat for several."),
    ],
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 0,
) -> None:
    """Serve scripted scenarios to Claude Code (point ANTHROPIC_BASE_URL at the printed URL)."""
    from agentdeck.mockmodel import serve

    serve(host, port, scenario)
