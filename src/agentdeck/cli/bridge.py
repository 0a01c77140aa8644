"""``agentdeck bridge discord`` / ``slack``: the deck in a chat channel (a client of the daemon)."""

from __future__ import annotations

import typer

bridge_app = typer.Typer(
    help="Chat bridges: talk to agents, approve and answer from a channel. They are clients "
    "of a running daemon (`agentdeck up`).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(bridge_app, name="bridge")


@bridge_app.command("discord")
def discord() -> None:
    """Serve the allow-listed Discord channels (AGENTDECK_DISCORD_*; see docs/settings.md)."""
    from agentdeck.bridges.discord.setup import serve
    from agentdeck.cli.context import run_async

    run_async(serve)


@bridge_app.command("slack")
def slack() -> None:
    """Serve the allow-listed Slack channels over Socket Mode (AGENTDECK_SLACK_*; see
    docs/settings.md)."""
    from agentdeck.bridges.slack.setup import serve
    from agentdeck.cli.context import run_async

    run_async(serve)
