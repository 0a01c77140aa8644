"""``agentdeck usage`` (cost and tokens over time) and ``agentdeck budgets`` (the
daily budgets of users and projects).

``usage`` asks the daemon when one runs (the quick path answers that), else
reads the database. ``budgets`` go through the deck (``cli.decks``: the daemon's
API when one runs, else the deck opened here), whose runner reads the budgets each
time an agent starts: a new budget holds from the next agent on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentdeck.cli import out
from agentdeck.cli.context import run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.cli.usage_out import print_budgets, print_usage
from agentdeck.core.usage import (
    Bucket,
    Budget,
    BudgetScope,
    UsageGroup,
    UsageReport,
    parse_since,
)
from agentdeck.errors import UsageError
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
UserOpt = Annotated[str | None, typer.Option("--user", help="A user's budget.")]
ProjectOpt = Annotated[
    str | None, typer.Option("--project", help="A project's budget (its directory).")
]

budgets_app = typer.Typer(
    help="Daily USD budgets of users and projects, enforced like the fleet's daily cap: "
    "`budgets ls`, `budgets set --user NAME USD` or `--project DIR USD`, `budgets rm`.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.command("usage")(usage)
    app.add_typer(budgets_app, name="budgets")


def usage(
    by: Annotated[
        UsageGroup, typer.Option(help="Group by project, agent template or user.")
    ] = UsageGroup.NONE,
    since: Annotated[str, typer.Option(help="How far back: 30m, 24h, 7d, 2w.")] = "7d",
    bucket: Annotated[Bucket, typer.Option(help="Sum per hour or per day (UTC).")] = Bucket.DAY,
    as_json: JsonOpt = False,
) -> None:
    """Cost and tokens over time, with the daily fleet cap and the budgets."""
    seconds = parse_since(since)

    async def go(settings: Settings) -> UsageReport:
        async with opened_deck(settings) as deck:
            return await deck.usage(since_seconds=seconds, bucket=bucket, by=by)

    print_usage(run_async(go), since=since, as_json=as_json)


def _scope(user: str | None, project: str | None) -> tuple[BudgetScope, str]:
    if (user is None) == (project is None):
        raise UsageError("name one budget: --user NAME or --project DIR")
    if user is not None:
        return BudgetScope.USER, user
    assert project is not None
    # Agents count for the absolute directory they were asked to work in.
    path = Path(project).expanduser()
    return BudgetScope.PROJECT, str(path.resolve()) if path.exists() else project


@budgets_app.command("ls")
def budgets_ls(as_json: JsonOpt = False) -> None:
    """The budgets, with what each user or project spent today (UTC)."""

    async def go(settings: Settings) -> list[Budget]:
        async with opened_deck(settings) as deck:
            return await deck.budgets()

    found = run_async(go)
    if as_json:
        from dataclasses import asdict

        out.print_json([asdict(b) for b in found])
    elif found:
        print_budgets(UsageReport(0, 0, Bucket.DAY, UsageGroup.NONE, [], None, found))
    else:
        out.say("no budgets: set one with `agentdeck budgets set --user NAME USD`")


@budgets_app.command("set")
def budgets_set(
    daily_usd: Annotated[float, typer.Argument(help="USD a day (UTC); 0 stops every new agent.")],
    user: UserOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Set (or change) a user's or a project's daily budget."""
    scope, name = _scope(user, project)

    async def go(settings: Settings) -> Budget:
        async with opened_deck(settings) as deck:
            return await deck.set_budget(scope, name, daily_usd)

    budget = run_async(go)
    out.say(f"{budget.scope} {budget.name}: ${budget.daily_usd:.2f} a day")


@budgets_app.command("rm")
def budgets_rm(user: UserOpt = None, project: ProjectOpt = None) -> None:
    """Remove a user's or a project's daily budget."""
    scope, name = _scope(user, project)

    async def go(settings: Settings) -> None:
        async with opened_deck(settings) as deck:
            await deck.remove_budget(scope, name)

    run_async(go)
    out.say(f"{scope} {name}: no budget")
