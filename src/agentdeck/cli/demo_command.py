"""``agentdeck demo``: the command; the demo itself is ``demo.py``, which prints
the daemon's banner (``daemon.py``). Apart from both, so neither imports the other
back."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentdeck.cli.context import load_settings
from agentdeck.cli.daemon import PortOpt


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    port: PortOpt = None,
    exit_when_done: Annotated[
        bool, typer.Option(help="Stop once the crew has finished its work (for scripts and tests).")
    ] = False,
) -> None:
    """A daemon with the scripted model and a small crew: no Claude account needed."""
    from agentdeck.cli.demo import run_demo

    settings = load_settings()
    home = settings.home_dir / "demo"
    changes: dict[str, object] = {"home": home}
    if port is not None:
        changes["port"] = port
    raise typer.Exit(
        asyncio.run(run_demo(settings.model_copy(update=changes), exit_when_done=exit_when_done))
    )
