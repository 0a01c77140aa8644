"""``agentdeck worktrees``: the agents' worktrees, and pruning the ones that hold
nothing that is not elsewhere."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli.agents import JsonOpt
from agentdeck.cli.context import console, run_async
from agentdeck.core.agent import Agent
from agentdeck.core.worktree import Worktree
from agentdeck.errors import NotFound
from agentdeck.settings import Settings

if TYPE_CHECKING:  # git's adapter loads when a command needs it, not at start-up
    from agentdeck.worktrees import Standing

worktrees_app = typer.Typer(
    help="The agents' git worktrees: what each holds, and pruning the merged or empty ones.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(worktrees_app, name="worktrees")


async def _listed(settings: Settings) -> list[tuple[Agent | None, Standing]]:
    """Every worktree under AGENTDECK_HOME/worktrees, with its agent if it still has one
    (asked of the deck: the daemon's when one runs)."""
    from agentdeck.cli.decks import opened_deck
    from agentdeck.worktrees import found_on_disk, standing

    rows: list[tuple[Agent | None, Standing]] = []
    found = await found_on_disk(settings.worktrees_dir)
    if not found:
        return rows
    async with opened_deck(settings) as deck:
        for agent_id, described in found.items():
            try:
                agent: Agent | None = await deck.get_agent(agent_id)
            except NotFound:
                agent = None
            worktree = described
            if agent is not None:
                worktree = Worktree.from_extra(agent.extra) or described
            rows.append((agent, await standing(worktree)))
    return rows


def _describe(agent: Agent | None, s: Standing) -> str:
    who = f"{agent.name} ({agent.id[:8]}, {agent.state})" if agent else "(agent record gone)"
    ahead = "?" if s.ahead is None else str(s.ahead)
    behind = "?" if s.behind is None else str(s.behind)
    state = (
        "empty" if s.empty
        else f"{len(s.unmerged)} commit(s) in no other branch" if s.unmerged
        else "merged"
    )  # fmt: skip
    dirty = f", {len(s.dirty)} uncommitted file(s)" if s.dirty else ""
    return (
        f"{s.worktree.branch}  {who}\n  {s.worktree.path}  (of {s.worktree.repo})\n"
        f"  +{ahead} -{behind} against {s.worktree.base}: {state}{dirty}"
    )


@worktrees_app.callback()
def worktrees(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the agents' worktrees: branch, agent, commits ahead and behind its base,
    uncommitted files, and whether it holds work that is in no other branch."""
    if ctx.invoked_subcommand is not None:
        return

    async def go(settings: Settings) -> None:
        rows = await _listed(settings)
        if as_json:
            print(json.dumps([_as_dict(a, s) for a, s in rows], indent=2))
            return
        if not rows:
            console.print("no worktrees")
        for agent, s in rows:
            console.print(_describe(agent, s), markup=False, highlight=False)

    run_async(go)


@worktrees_app.command("prune")
def prune(
    force: Annotated[
        bool,
        typer.Option("--force", help="Remove worktrees holding work that is nowhere else too."),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go.")] = False,
) -> None:
    """Remove the worktrees (and branches) that are empty or merged; the others are
    kept unless --force, which names what is lost. A live agent's is always kept."""

    async def go(settings: Settings) -> None:
        for agent, s in await _listed(settings):
            name = s.worktree.branch
            if agent is not None and agent.state.is_live:
                console.print(f"kept {name}: its agent is {agent.state}", markup=False)
                continue
            if not s.merged and not force:
                lost = s.unmerged[:5] + [f"uncommitted: {f}" for f in s.dirty[:5]]
                console.print(
                    f"kept {name}: it holds work that is nowhere else ({'; '.join(lost)}); "
                    "--force removes it",
                    markup=False,
                )
                continue
            verb = "would remove" if dry_run else "removed"
            if not s.merged:
                verb += f" (losing {len(s.unmerged)} commit(s), {len(s.dirty)} file(s))"
            if not dry_run:
                from agentdeck.worktrees import remove

                await remove(s.worktree, force=force)
            console.print(f"{verb} {name} ({s.worktree.path})", markup=False)

    run_async(go)


def _as_dict(agent: Agent | None, s: Standing) -> dict[str, object]:
    return {
        **s.worktree.to_dict(),
        "agent_id": agent.id if agent else None,
        "agent_state": str(agent.state) if agent else None,
        "ahead": s.ahead,
        "behind": s.behind,
        "dirty": s.dirty,
        "unmerged": s.unmerged,
        "merged": s.merged,
        "empty": s.empty,
    }
