"""Steering commands: ls, show, logs, send, interrupt, kill, resume.

Each goes through the daemon when one runs for this home (``remote``, which the
quick path calls too), and works embedded (straight on the store, with a local
runner) when none does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli import reads, remote, remote_follow
from agentdeck.cli.context import opened, run_async
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
    if (d := remote.daemon()) is not None:
        raise typer.Exit(remote.send(d, agent, text, as_json, no_wait))

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli.follow import follow_answer, follow_session, turn_running

        async with opened(settings) as (store, runner):
            from agentdeck.runner.steering import Steering

            ending.supervise(runner)  # SIGTERM/SIGHUP stop the agent it resumes
            try:
                # Where the log stands before it is sent: the answer comes after.
                mark = await store.last_event_id()
                running = await turn_running(store, await store.find_agent(agent), mark)
                taken = await Steering(store, runner).send(agent, text)
                if taken is not None:  # another process (an `agentdeck run`) runs it
                    if no_wait:
                        said = "queued for" if running else "sent to"
                        remote.say_agent(
                            taken.to_dict(), f"{said} {taken.id} ({taken.state})", as_json
                        )
                        return 0
                    return await follow_answer(
                        store, taken.id, after=mark, answer=remote_follow.AnswerTo(running),
                        as_json=as_json, poll=settings.command_poll_seconds,
                    )  # fmt: skip
                session = next(iter(runner.sessions.values()))
                return await follow_session(store, session, as_json=as_json)
            finally:
                await ending.stopped()

    from agentdeck.cli.ending import watch

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
    if (d := remote.daemon()) is not None:
        raise typer.Exit(remote.resume(d, agent, text, fork, as_json))

    async def work(settings: Settings, ending: Ending) -> int:
        from agentdeck.cli.follow import follow_session

        async with opened(settings) as (store, runner):
            ending.supervise(runner)  # SIGTERM/SIGHUP stop the agent it resumes
            try:
                session = await runner.resume(agent, text, fork=fork)
                return await follow_session(store, session, as_json=as_json)
            finally:
                await ending.stopped()

    from agentdeck.cli.ending import watch

    raise typer.Exit(run_async(lambda settings: watch("resume", lambda e: work(settings, e))))
