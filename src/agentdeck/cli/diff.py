"""``agentdeck diff``: what an agent in a worktree changed."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from agentdeck.cli.agents import AgentArg, JsonOpt, find
from agentdeck.cli.context import run_async
from agentdeck.core.agent import Agent
from agentdeck.core.worktree import Worktree
from agentdeck.settings import Settings
from agentdeck.worktrees import Diff, Worktrees, worktree_of


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)


def diff(
    agent: AgentArg,
    stat: Annotated[
        bool, typer.Option("--stat", help="Only the files, lines added and removed.")
    ] = False,
    against: Annotated[
        str | None,
        typer.Option(
            help="Compare with where the agent's branch left this ref (default: where it started)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What an agent in a worktree changed, committed or not, against where it started.

    Coloured in a terminal, plain when piped."""

    async def go(settings: Settings) -> None:
        found = await find(settings, agent)
        worktree = worktree_of(found)
        color = sys.stdout.isatty() and not as_json
        changes = await Worktrees(settings.worktrees_dir).diff(
            worktree, against=against, patch=not stat, color=color
        )
        if as_json:
            print(json.dumps(changes.to_dict(found, worktree), indent=2))
        elif stat:
            print(stat_text(found, worktree, changes))
        else:
            sys.stdout.write(changes.patch)

    run_async(go)


def stat_text(agent: Agent, worktree: Worktree, changes: Diff) -> str:
    lines = [f"{agent.name} on {worktree.branch}, against {changes.against[:12]}"]
    width = max((len(f.path) for f in changes.files), default=0)
    for f in changes.files:
        counts = "binary" if f.added is None else f"+{f.added} -{f.removed}"
        lines.append(f"  {f.path:<{width}}  {counts}")
    added = sum(f.added or 0 for f in changes.files)
    removed = sum(f.removed or 0 for f in changes.files)
    n = len(changes.files)
    lines.append(f"{n} file{'' if n == 1 else 's'} changed, +{added} -{removed}")
    return "\n".join(lines)
