"""``agentdeck queue``: the merge queue — what waits to land, what is being merged,
how the last ones ended — and taking a queued merge out of it."""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli import reads
from agentdeck.cli.context import console, run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.cli.wire import wired
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

queue_app = typer.Typer(
    help="The merge queue: agents' branches waiting to land, one at a time per repository.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(queue_app, name="queue")


@queue_app.callback()
def queue(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Every ended entry.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Entries read.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """The merge queue: pending merges in order (one merges at a time per
    repository), then the last outcomes (--all: every one)."""
    if ctx.invoked_subcommand is not None:
        return
    raise typer.Exit(wired(lambda deck: reads.queue(deck, all_, limit, as_json)))


@queue_app.command("cancel")
def cancel(
    ref: Annotated[str, typer.Argument(help="The entry's id (or a unique prefix).")],
) -> None:
    """Take a queued merge out of the queue (not one already merging)."""

    async def go(settings: Settings) -> None:
        async with opened_deck(settings) as deck:
            entry = await deck.cancel_merge(ref)
        console.print(entry.describe(), markup=False, highlight=False)

    run_async(go)
