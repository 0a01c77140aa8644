"""``agentdeck memory search / show / forget``: what earlier sessions left behind.

On the deck (``cli.decks``): the daemon's when one runs for this home, else one
opened here. Projects are stored as absolute directories, so ``--project`` takes any
path and resolves it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agentdeck.cli.context import console, run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.cli.remote import print_hits
from agentdeck.core.knowledge import MAX_SEARCH_LIMIT, MemoryRecord, record_to_dict
from agentdeck.core.memory import MemoryHit
from agentdeck.errors import UsageError
from agentdeck.memory.projects import project_of
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ProjectOpt = Annotated[
    Path | None, typer.Option(help="A project directory (any path; resolved to absolute).")
]

memory_app = typer.Typer(
    help="Memory of earlier Claude Code sessions. `memory search QUERY [--project P] "
    "[--limit N]` lists matches (id, kind, age, project, title, snippet); `memory show ID` "
    "prints one record whole; `memory forget ID | --session S | --project P [--yes]` deletes "
    "(exactly one selector). Each takes --json.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")


def project_dir(path: Path | None) -> str | None:
    return None if path is None else project_of(str(path))


@memory_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Any words; punctuation is not syntax.")],
    project: ProjectOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_SEARCH_LIMIT, help="Most results.")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search over observations and session summaries, best first."""
    where = project_dir(project)

    async def go(settings: Settings) -> list[MemoryHit]:
        async with opened_deck(settings) as deck:
            return await deck.memory_search(query, project=where, limit=limit)

    print_hits(query, [h.to_dict() for h in run_async(go)], as_json)


@memory_app.command("show")
def show(
    memory_id: Annotated[str, typer.Argument(help="A record id (ob… or su…).")],
    as_json: JsonOpt = False,
) -> None:
    """One record, whole: a tool call with its output, or a session's summary."""

    async def go(settings: Settings) -> MemoryRecord:
        async with opened_deck(settings) as deck:
            return await deck.memory_record(memory_id)

    record = run_async(go)
    if as_json:
        console.print_json(json.dumps(record_to_dict(record)))
    else:
        from agentdeck.memory.mcp_server import record_text

        console.print(Text(record_text(record)))


@memory_app.command("forget")
def forget(
    memory_id: Annotated[str | None, typer.Argument(help="One record id (ob… or su…).")] = None,
    session: Annotated[str | None, typer.Option(help="Every record of this session.")] = None,
    project: ProjectOpt = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask before forgetting many records.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete one record, or every record of a session or a project (exactly one)."""
    where = project_dir(project)
    given = [s for s in (memory_id, session, where) if s]
    if len(given) != 1:
        raise UsageError("give exactly one of ID, --session or --project")
    if memory_id is None and not yes:
        what = f"session {session}" if session else f"project {where}"
        if not sys.stdin.isatty():
            raise UsageError(f"forgetting every record of {what} needs --yes")
        typer.confirm(f"Forget every memory record of {what}?", abort=True)

    async def go(settings: Settings) -> int:
        async with opened_deck(settings) as deck:
            return await deck.forget_memory(memory_id=memory_id, session_id=session, project=where)

    forgotten = run_async(go)
    if as_json:
        console.print_json(json.dumps({"forgotten": forgotten}))
    else:
        console.print(f"forgot {forgotten} record{'' if forgotten == 1 else 's'}")
