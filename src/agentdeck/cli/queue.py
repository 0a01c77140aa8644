"""``agentdeck queue``: the merge queue — what waits to land, what is being merged,
how the last ones ended — and taking a queued merge out of it."""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli import local, remote
from agentdeck.cli.client import connect
from agentdeck.cli.context import console, opened, peeked, run_async
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
    if (d := remote.daemon()) is not None:
        raise typer.Exit(remote.queue(d, all_, limit, as_json))
    raise typer.Exit(peeked(lambda db: local.queue(db, all_, limit, as_json)))


@queue_app.command("cancel")
def cancel(
    ref: Annotated[str, typer.Argument(help="The entry's id (or a unique prefix).")],
) -> None:
    """Take a queued merge out of the queue (not one already merging)."""

    async def go(settings: Settings) -> None:
        from agentdeck.core.merge_queue import MergeEntry

        client = await connect(settings)
        if client is not None:
            try:
                data = await client.call("POST", f"/api/merges/{ref}/cancel")
            finally:
                await client.aclose()
            entry = MergeEntry.from_dict(data)
        else:
            async with opened(settings) as (_store, runner):
                entry = await runner.merges.cancel(ref, by="user:cli")
        console.print(entry.describe(), markup=False, highlight=False)

    run_async(go)
