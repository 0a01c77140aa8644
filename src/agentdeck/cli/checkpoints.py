"""``agentdeck checkpoints`` and ``rewind``: the snapshots taken of an agent's
workspace before each of its file-changing tool calls, and putting its files back
as they were before one."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentdeck.cli.agents import AgentArg, JsonOpt
from agentdeck.cli.context import run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.settings import Settings

if TYPE_CHECKING:  # the checkpoint model loads when a command needs it
    from agentdeck.core.checkpoint import Checkpoint


def register(app: typer.Typer) -> None:
    app.command("checkpoints")(checkpoints)
    app.command("rewind")(rewind)


def checkpoints(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """An agent's checkpoints, oldest first: when, before which tool call, and what
    the tool calls before it changed. `agentdeck rewind ID --to N` goes back to one."""

    async def go(settings: Settings) -> None:
        async with opened_deck(settings) as deck:
            listed = await deck.checkpoints(agent)
            name = "" if listed or as_json else (await deck.get_agent(agent)).name
        if as_json:
            print(json.dumps([c.to_dict() for c in listed], indent=2))
        elif not listed:
            print(f"{name} has no checkpoints yet (one is taken before each tool call "
                  "that can change files)")  # fmt: skip
        else:
            print("\n".join(timeline_line(c) for c in listed))

    run_async(go)


def timeline_line(c: Checkpoint) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.ts))
    counts = ", ".join(f"{n} {_WORDS[s]}" for s, n in sorted(c.counts.items()) if n)
    changed = f"  [{counts} since #{c.n - 1}]" if counts else ""
    skipped = f"  ({len(c.skipped)} large file(s) left out)" if c.skipped else ""
    return f"#{c.n:<4} {when}  {c.summary}{changed}{skipped}"


_WORDS = {"A": "added", "M": "modified", "D": "deleted"}


def rewind(
    agent: AgentArg,
    to: Annotated[
        int | None,
        typer.Option("--to", min=1, help="The checkpoint (default: the last one)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change (a patch); change nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Put an agent's files back as they were at checkpoint N, just before its tool
    call: changed and deleted files restored, files created since removed (ignored and
    oversize files are left alone). A checkpoint is taken first, so rewinding to it
    undoes this. Not while the agent works."""

    async def go(settings: Settings) -> None:
        async with opened_deck(settings) as deck:
            done = (await deck.rewind(agent, to=to, dry_run=dry_run)).to_dict()
        if as_json:
            print(json.dumps(done, indent=2))
            return
        print(rewind_text(done))

    run_async(go)


def rewind_text(done: dict[str, Any]) -> str:
    restored, removed, kept = done["restored"], done["removed"], done["kept"]
    if done["dry_run"]:
        head = f"rewinding to checkpoint {done['to']} would restore {len(restored)} file(s) " \
               f"and remove {len(removed)}"  # fmt: skip
    else:
        head = f"rewound to checkpoint {done['to']}: {len(restored)} file(s) restored, " \
               f"{len(removed)} removed; `--to {done['undo']}` undoes it"  # fmt: skip
    lines = [head]
    lines += [f"  restored  {p}" for p in restored] + [f"  removed   {p}" for p in removed]
    lines += [f"  left alone (ignored or too large)  {p}" for p in kept]
    if done["dry_run"] and done["patch"]:
        lines += ["", done["patch"].rstrip("\n")]
    return "\n".join(lines)
