"""``agentdeck schedule add / ls / show / pause / resume / run / rm``: agents that
start themselves when a cron expression comes due.

Through the deck (``cli.decks.opened_deck``): the daemon's when one runs — its
scheduler fires the schedules — else the home's own in this process (a schedule
added then is a row the daemon fires once it runs). ``run NAME`` starts one run now
and, unless ``--detach``, follows its agent until it ends (without a daemon the
agent lives only as long as the command).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from agentdeck.cli.context import run_async
from agentdeck.cli.decks import opened_deck
from agentdeck.cli.out import print_json, say
from agentdeck.core.schedules import (
    Schedule,
    ScheduleRun,
    check_catch_up,
    check_cron,
    check_name,
    check_overlap,
    check_tz,
)
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.core.deck import Deck

T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
NameArg = Annotated[str, typer.Argument(help="The schedule's name.")]
FOLLOW_POLL_SECONDS = 0.5

schedule_app = typer.Typer(
    help="Schedules: `schedule add NAME --cron '0 9 * * 1-5' (--agent TEMPLATE | --scenario "
    "S) --prompt '...'` starts an agent each time the cron expression comes due (the "
    "daemon fires them). `schedule ls`, `schedule show NAME` (next runs and history), "
    "`schedule pause|resume|run|rm NAME`.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")


def on_deck(act: Callable[[Deck], Awaitable[T]]) -> T:
    async def go(settings: Settings) -> T:
        async with opened_deck(settings) as deck:
            return await act(deck)

    return run_async(go)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(ts))


def _line(s: Schedule) -> str:
    what = f"agent {s.template}" if s.template else f"scenario {s.scenario}"
    state = "paused" if s.paused else f"next {_when(s.next_at)}"
    return f"{s.name}  {s.cron} ({s.tz})  {what}  overlap {s.overlap}  {state}"


def _run_line(r: ScheduleRun) -> str:
    agent = f"  agent {r.agent_id}" if r.agent_id else ""
    why = f"  {r.reason}" if r.reason else ""
    return f"  {_when(r.due_at)}  {r.outcome}{agent}{why}"


@schedule_app.command("add")
def add(
    name: NameArg,
    cron: Annotated[
        str, typer.Option("--cron", help="Five fields: minute hour day month weekday.")
    ],
    prompt: Annotated[str, typer.Option("--prompt", help="What each run's agent is asked.")],
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent template each run starts.")
    ] = None,
    scenario: Annotated[
        str | None, typer.Option("--scenario", help="Run its agents on a scripted-model scenario.")
    ] = None,
    cwd: Annotated[
        Path | None, typer.Option("--cwd", help="Where its agents work (default: here).")
    ] = None,
    worktree: Annotated[
        bool, typer.Option("--worktree", help="Each run in a git worktree of its own.")
    ] = False,
    budget_usd: Annotated[
        float | None,
        typer.Option("--budget-usd", help="Its runs' daily budget: a run past it is refused."),
    ] = None,
    overlap: Annotated[
        str,
        typer.Option(
            "--overlap", help="While the previous run's agent still runs: skip, queue or allow."
        ),
    ] = "skip",
    tz: Annotated[
        str, typer.Option("--tz", help="The time zone the cron expression is read in.")
    ] = "UTC",
    catch_up: Annotated[
        str,
        typer.Option(
            "--catch-up", help="Runs missed while the daemon was down: skip, or once (one run)."
        ),
    ] = "skip",
    as_json: JsonOpt = False,
) -> None:
    """Add a schedule: an agent starts each time CRON comes due."""
    check_name(name)  # bad input: said before a deck is opened
    check_cron(cron)
    check_tz(tz)
    check_overlap(overlap)
    check_catch_up(catch_up)
    where = str((cwd or Path.cwd()).resolve())

    made = on_deck(
        lambda deck: deck.add_schedule(
            name,
            cron,
            prompt=prompt,
            template=agent,
            scenario=scenario,
            project=where,
            cwd=where,
            worktree=worktree,
            budget_usd=budget_usd,
            overlap=overlap,
            tz=tz,
            catch_up=catch_up,
        )  # fmt: skip
    )
    if as_json:
        print_json(made.to_dict())
    else:
        say(f"schedule {made.name} added: next run {_when(made.next_at)}")


@schedule_app.command("ls")
def ls(as_json: JsonOpt = False) -> None:
    """The schedules: name, cron, what they start, their next run."""
    found = on_deck(lambda deck: deck.schedules())
    if as_json:
        print_json([s.to_dict() for s in found])
    elif not found:
        say("no schedules (`agentdeck schedule add` makes one)")
    else:
        for s in found:
            say(_line(s))


@schedule_app.command("show")
def show(name: NameArg, as_json: JsonOpt = False) -> None:
    """A schedule, its next runs and its history (newest first)."""
    view = on_deck(lambda deck: deck.schedule(name))
    if as_json:
        print_json(view.to_dict())
        return
    s = view.schedule
    say(_line(s))
    say(f"  prompt: {s.prompt}")
    say(f"  project: {s.project}  owner: {s.created_by}  catch-up: {s.catch_up}")
    if s.budget_usd is not None:
        say(f"  daily budget: ${s.budget_usd:.2f}")
    for t in view.upcoming:
        say(f"  next: {_when(t)}")
    for r in view.runs:
        say(_run_line(r))


@schedule_app.command("pause")
def pause(name: NameArg) -> None:
    """No run until it is resumed."""
    on_deck(lambda deck: deck.pause_schedule(name))
    say(f"schedule {name} paused")


@schedule_app.command("resume")
def resume(name: NameArg) -> None:
    """Runs again from its next due time (what it missed paused is not run)."""
    s = on_deck(lambda deck: deck.resume_schedule(name))
    say(f"schedule {name} resumed: next run {_when(s.next_at)}")


@schedule_app.command("run")
def run(
    name: NameArg,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="Return once its agent started (with a daemon; without one the agent "
            "stops with the command).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """One run now, through its daily budget and overlap rules; follows its agent
    until it ends unless --detach."""

    async def act(deck: Deck) -> tuple[ScheduleRun, dict[str, Any] | None]:
        started = await deck.run_schedule(name)
        if started.agent_id is None or detach:
            return started, None
        while True:
            agent = await deck.get_agent(started.agent_id)
            if not agent.state.is_live:
                return started, agent.to_dict()
            await _pause()

    ran, agent = on_deck(act)
    if as_json:
        print_json({**ran.to_dict(), "agent": agent})
    elif ran.agent_id is None:
        say(f"schedule {name}: {ran.outcome}: {ran.reason}")
        raise typer.Exit(1)
    else:
        ended = f" ({agent['state']})" if agent is not None else ""
        say(f"schedule {name}: started agent {ran.agent_id}{ended}")


async def _pause() -> None:
    await asyncio.sleep(FOLLOW_POLL_SECONDS)


@schedule_app.command("rm")
def rm(name: NameArg) -> None:
    """Remove a schedule and its history (its agents stay)."""
    on_deck(lambda deck: deck.remove_schedule(name))
    say(f"schedule {name} removed")
