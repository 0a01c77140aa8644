"""``agentdeck queue``: the merge queue — what waits to land, what is being merged,
how the last ones ended — and taking a queued merge out of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli.client import connect
from agentdeck.cli.context import console, opened, opened_store, run_async
from agentdeck.settings import Settings

if TYPE_CHECKING:  # the queue's model loads when a command needs it
    from agentdeck.core.merge_queue import MergeEntry

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
RECENT = 5  # ended entries shown without --all

queue_app = typer.Typer(
    help="The merge queue: agents' branches waiting to land, one at a time per repository.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(queue_app, name="queue")


async def _entries(settings: Settings, limit: int) -> list[MergeEntry]:
    """Newest first."""
    from agentdeck.core.merge_queue import MergeEntry

    client = await connect(settings)
    if client is not None:
        try:
            data = await client.call("GET", "/api/merges", params={"limit": limit})
        finally:
            await client.aclose()
        return [MergeEntry.from_dict(e) for e in data["merges"]]
    async with opened_store(settings) as store:
        from agentdeck.store.merges import MergeStore

        return await MergeStore(store).list_merges(limit=limit)


def render(entries: list[MergeEntry], *, recent: int | None) -> str:
    """The pending entries in the order they will be taken, each with its place in
    its repository's queue; then how the last ones ended."""
    from agentdeck.core.merge_queue import PENDING, MergeState

    pending = sorted((e for e in entries if e.state in PENDING), key=lambda e: e.enqueued_at)
    ended = [e for e in entries if e.state not in PENDING][:recent]
    lines: list[str] = []
    places: dict[str, int] = {}
    for e in pending:
        places[e.repo] = places.get(e.repo, 0) + 1
        where = "merging now" if e.state is MergeState.MERGING else f"#{places[e.repo]}"
        lines.append(f"{where:>11}  {e.describe()}\n             in {e.repo}")
    if not pending:
        lines.append("nothing waiting to merge")
    if ended:
        lines.append("recent:" if recent else "ended:")
        lines += [f"  {e.describe()}" for e in ended]
    return "\n".join(lines)


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

    async def go(settings: Settings) -> None:
        entries = await _entries(settings, limit)
        if as_json:
            print(json.dumps([e.result() for e in entries], indent=2))
            return
        console.print(render(entries, recent=None if all_ else RECENT), markup=False,
                      highlight=False)  # fmt: skip

    run_async(go)


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
