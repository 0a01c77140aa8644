"""``agentdeck memories pending / accept / reject / edit``: the Memories inbox.

What agents proposed with the deck's ``remember`` tool waits here until a person
accepts, edits or rejects it; accepted memories are told to later agents of the
same template in the same project. A memory's text is the model's: it is printed
as plain text, never as markup.
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.text import Text

from agentdeck.cli.context import console, run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.core.memory_proposals import KINDS, MemoryProposal
from agentdeck.core.summary import age
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
IdArg = Annotated[str, typer.Argument(help="The memory's id (mp…).")]

memories_app = typer.Typer(
    help="Memories agents proposed with the deck's remember tool. `memories pending` lists "
    "those waiting (--state accepted|rejected|all for others); `memories accept ID`, "
    "`memories reject ID` (an accepted one is withdrawn), `memories edit ID --text T "
    "[--kind K]`. Accepted memories are told to later agents of the same template in the "
    "same project. Each takes --json.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(memories_app, name="memories")


def _line(m: MemoryProposal, now: float) -> Text:
    line = Text()
    line.append(m.id, style="bold")
    line.append(f"  {m.state}  {m.kind}  {m.template or '(no template)'}  agent {m.agent_id}")
    line.append(f"  {age(now - m.created_at)} ago  {m.project}", style="dim")
    if m.edited:
        line.append("  (edited)", style="dim")
    line.append("\n    ")
    line.append(m.text.replace("\n", "\n    "))
    return line


def _said(m: MemoryProposal, as_json: bool, verb: str) -> None:
    if as_json:
        console.print_json(json.dumps(m.to_dict()))
    else:
        console.print(Text(f"{verb} {m.id}: ") + _line(m, time.time()))


@memories_app.command("pending")
def pending(
    state: Annotated[
        str, typer.Option(help="pending, accepted, rejected or all.", show_default=True)
    ] = "pending",
    limit: Annotated[int, typer.Option(min=1, max=500, help="Most memories.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List proposed memories, newest first (those waiting for review by default)."""

    async def go(settings: Settings) -> list[MemoryProposal]:
        async with opened_deck(settings) as deck:
            return await deck.memory_proposals(state, limit=limit)

    found = run_async(go)
    if as_json:
        console.print_json(json.dumps([m.to_dict() for m in found]))
        return
    if not found:
        console.print(f"no {'' if state == 'all' else state + ' '}memories")
        return
    now = time.time()
    for m in found:
        console.print(_line(m, now))


@memories_app.command("accept")
def accept(memory_id: IdArg, as_json: JsonOpt = False) -> None:
    """Accept a pending memory: later agents of its template in its project are told it."""

    async def go(settings: Settings) -> MemoryProposal:
        async with opened_deck(settings) as deck:
            return await deck.accept_memory(memory_id)

    _said(run_async(go), as_json, "accepted")


@memories_app.command("reject")
def reject(memory_id: IdArg, as_json: JsonOpt = False) -> None:
    """Reject a pending memory, or withdraw an accepted one."""

    async def go(settings: Settings) -> MemoryProposal:
        async with opened_deck(settings) as deck:
            return await deck.reject_memory(memory_id)

    _said(run_async(go), as_json, "rejected")


@memories_app.command("edit")
def edit(
    memory_id: IdArg,
    text: Annotated[str | None, typer.Option(help="The new text (at most 2 KB).")] = None,
    kind: Annotated[str | None, typer.Option(help=f"The new kind: {', '.join(KINDS)}.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Reword a pending or accepted memory (scrubbed like an agent's); its state stays."""

    async def go(settings: Settings) -> MemoryProposal:
        async with opened_deck(settings) as deck:
            return await deck.edit_memory(memory_id, text=text, kind=kind)

    _said(run_async(go), as_json, "edited")
