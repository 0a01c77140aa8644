"""``agentdeck tui``: the deck in a terminal, as a client of the daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentdeck.cli.context import console, load_settings
from agentdeck.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)


def tui(
    url: Annotated[
        str | None,
        typer.Option(help="A remote daemon's address, e.g. http://127.0.0.1:8765 (needs --token)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="With --url: the token of that daemon's home (see --token-file)."),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="With --url: a file holding the token (kept out of the process list)."),
    ] = None,
    start: Annotated[
        bool,
        typer.Option(
            help="Without --url, start a daemon in the background (as `up -d`) if none runs."
        ),
    ] = True,
) -> None:
    """Agent table, transcripts, approvals and asks, steering — in the terminal.

    Keys: / filter, s sort, m message, a allow, A always, d deny, n answer, i interrupt,
    k kill, r resume, q quit.
    """
    from agentdeck.tui.link import FixedLocator, HomeLocator, Locator

    locator: Locator
    if token_file is not None:
        if token is not None:
            raise UsageError("give the token once: --token or --token-file")
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise UsageError(f"cannot read the token file {token_file}: {exc.strerror}") from exc
    if url is not None:
        locator = FixedLocator(url, token or "")
    elif token is not None:
        raise UsageError(
            "--token and --token-file go with --url; a local daemon's token is read from its home"
        )
    else:
        settings = load_settings()
        home = HomeLocator(settings.home_dir)
        if not home.running():
            if not start:
                home()  # raises: no daemon, with the way to start one
            from agentdeck.cli.daemon import _detach

            console.print(f"no daemon was running for {settings.home_dir}; starting one")
            settings.ensure_home()
            _detach(settings)
        home()  # a daemon that holds the home but left no token is an error here
        locator = home
    from agentdeck.tui.app import DeckApp

    DeckApp(locator).run()
