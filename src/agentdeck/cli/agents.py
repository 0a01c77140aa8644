"""Steering commands: ls, show, logs, send, interrupt, kill, resume.

The reads are written once against the wire (``cli.reads``); the acts against
the Deck (``cli.decks``: the daemon's when one runs for this home, else this
command's own, which runs what it resumes in this process); ``send`` and
``resume`` follow the agent with ``cli.steer``. (The quick path answers the same
commands from the daemon's JSON when one runs: ``cli.quick``.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli import reads, remote, remote_follow
from agentdeck.cli.context import run_async
from agentdeck.cli.ending import watch
from agentdeck.cli.wire import wired
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.cli.ending import Ending

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
AgentArg = Annotated[str, typer.Argument(help="Agent id, unique id prefix, or name.")]


def register(app: typer.Typer) -> None:
    for name, fn in (
        ("ls", ls),
        ("show", show),
        ("logs", logs),
        ("send", send),
        ("interrupt", interrupt),
        ("kill", kill),
        ("resume", resume),
    ):
        app.command(name)(fn)


def ls(
    state: Annotated[list[str] | None, typer.Option(help="Only agents in this state.")] = None,
    # At most the API's page (10,000): a larger number is refused here, not by SQLite.
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Most agents to list.")] = 50,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree", help="Agents an orchestrator started under it, with the tree's cost."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List agents, newest first."""
    raise typer.Exit(wired(lambda deck: reads.ls(deck, state, limit, tree, as_json)))


def show(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Show one agent, its parent and its children."""
    raise typer.Exit(wired(lambda deck: reads.show(deck, agent, as_json)))


def logs(
    agent: AgentArg,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new events until the agent finishes."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print an agent's events."""
    raise typer.Exit(wired(lambda deck: reads.logs(deck, agent, follow, as_json)))


def send(
    agent: AgentArg,
    text: Annotated[str, typer.Argument(help="The message.")],
    as_json: JsonOpt = False,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="Say it was sent (or queued, to a busy agent) and exit. Without a "
            "daemon, a finished agent is resumed and followed all the same: this "
            "process runs it.",
        ),
    ] = False,
) -> None:
    """Send a follow-up and follow the turn that answers it (a busy agent answers
    what it was asked before first). A finished agent is resumed with it."""

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli import steer
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings, ending=ending) as deck:
            found = await deck.get_agent(agent)
            mark = await deck.last_event_id()  # where the log stands: the answer comes after
            running = await steer.turn_running(deck, found, mark)
            sent = await deck.send(found.id, text)
            # An agent this process now runs (no daemon) is followed all the same:
            # leaving would stop it.
            if no_wait and sent.owner_pid != os.getpid():
                said = "queued for" if running else "sent to"
                remote.say_agent(sent.to_dict(), f"{said} {sent.id} ({sent.state})", as_json)
                return 0
            answer = remote_follow.AnswerTo(running)
            return await steer.follow(
                deck, found.id, after=mark, as_json=as_json, until_turn=True, answer=answer
            )

    raise typer.Exit(run_async(lambda settings: watch("send", lambda e: work(settings, e))))


def interrupt(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Interrupt an agent's current turn."""
    _act(agent, "interrupt", "interrupted", as_json, body={})


def kill(
    agent: AgentArg,
    tree: Annotated[
        bool,
        typer.Option(
            "--tree/--keep-children",
            help="Also kill every agent it started (the default), or leave them running.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Stop an agent and every process it started, now."""
    _act(agent, "kill", "killed", as_json, body={"children": tree})


def _act(ref: str, action: str, done: str, as_json: bool, body: dict[str, object]) -> None:
    async def go(settings: Settings) -> None:
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings) as deck:
            if action == "interrupt":
                a = await deck.interrupt(ref)
            else:
                a = await deck.kill(ref, children=bool(body.get("children", True)))
        remote.say_agent(a.to_dict(), f"{done} {a.id} ({a.state})", as_json)

    run_async(go)


def resume(
    agent: AgentArg,
    text: Annotated[str | None, typer.Argument(help="What to say on resuming.")] = None,
    fork: Annotated[bool, typer.Option(help="Continue in a new agent; leave this one.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Resume a finished agent's Claude session in a new process."""

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli import steer
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings, ending=ending) as deck:
            found = await deck.get_agent(agent)
            mark = 0 if fork else await deck.last_event_id()
            resumed = await deck.resume(found.id, text, fork=fork)
            return await steer.follow(
                deck, resumed.id, after=mark, as_json=as_json, until_turn=True
            )

    raise typer.Exit(run_async(lambda settings: watch("resume", lambda e: work(settings, e))))
