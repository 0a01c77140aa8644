"""``agentdeck diff`` and ``merge``: what an agent in a worktree changed, and
landing it, test-gated."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, cast

import typer

from agentdeck.cli.agents import AgentArg, JsonOpt, find
from agentdeck.cli.client import connect
from agentdeck.cli.context import opened, run_async
from agentdeck.core.agent import Agent
from agentdeck.core.worktree import STRATEGIES, Strategy, Worktree
from agentdeck.errors import UsageError
from agentdeck.settings import Settings

if TYPE_CHECKING:  # git's adapter loads when a command needs it, not at start-up
    from agentdeck.worktrees import Diff


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
    app.command("merge")(merge)


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
        from agentdeck.worktrees import Worktrees, worktree_of

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


def merge(
    agent: AgentArg,
    test: Annotated[
        str | None,
        typer.Option(
            help="The command the combination must pass (default: `test` of the target's "
            ".agentdeck/merge.yaml, or none), run in the sandbox of the agent's profile."
        ),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="merge (a merge commit), squash (one commit) or rebase.")
    ] = "merge",
    into: Annotated[
        str | None, typer.Option(help="The branch to land on (default: the one it started from).")
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", help="Queue it and return (needs the daemon)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Put an agent's branch in its repository's merge queue, which lands one at a
    time: combined with the latest target in a scratch worktree, tested there, and
    the target moved to exactly that tested commit. Exit 0 when it landed (or was
    queued, with --no-wait), 1 when it was refused.

    The test runs what the branch holds, so it runs as the agent's own commands do:
    in its profile's sandbox (refused where a required one cannot be given), its
    output scrubbed of secrets."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")

    async def go(settings: Settings) -> int:
        client = await connect(settings)
        if client is not None:
            try:
                outcome = await client.merge(
                    agent, into=into, strategy=strategy, test=test, wait=not no_wait
                )
            finally:
                await client.aclose()
        elif no_wait:
            raise UsageError(
                "--no-wait needs the daemon to merge after this command ends",
                hint="`agentdeck up` starts it; or merge without --no-wait",
            )
        else:
            async with opened(settings) as (store, runner):
                found = await store.find_agent(agent)
                entry = await runner.merge(
                    found, into=into, strategy=cast(Strategy, strategy), test=test
                )
                outcome = entry.result()
        if as_json:
            print(json.dumps(outcome, indent=2))
        elif outcome["state"] == "queued":
            print(f"queued: {outcome['id']} ({outcome['branch']} → {outcome['target']}); "
                  "`agentdeck queue` follows it")  # fmt: skip
        else:
            # A landing's reason says so itself ("landed on main as …").
            print(outcome["reason"] if outcome["landed"] else f"refused: {outcome['reason']}")
            if outcome.get("test_output"):
                print(str(outcome["test_output"]).rstrip())
        return 0 if outcome["landed"] or outcome["state"] == "queued" else 1

    raise typer.Exit(run_async(go))
