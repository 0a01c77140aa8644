"""Steering commands: ls, show, logs, send, interrupt, kill, resume."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from agentdeck.cli.context import console, opened, opened_store, run_async
from agentdeck.cli.render import agent_panel, agents_table, event_line
from agentdeck.core.agent import AgentState
from agentdeck.errors import UsageError
from agentdeck.settings import Settings

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


def _states(values: list[str] | None) -> list[AgentState] | None:
    if not values:
        return None
    try:
        return [AgentState(v) for v in values]
    except ValueError:
        raise UsageError(
            f"unknown state in {values}; states are: {', '.join(s.value for s in AgentState)}"
        ) from None


def ls(
    state: Annotated[list[str] | None, typer.Option(help="Only agents in this state.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most agents to list.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List agents, newest first."""
    states = _states(state)

    async def go(settings: Settings) -> None:
        async with opened_store(settings) as store:
            agents = await store.list_agents(states=states, limit=limit)
        if as_json:
            console.print_json(json.dumps([a.to_dict() for a in agents]))
        elif agents:
            console.print(agents_table(agents))
        else:
            console.print("no agents yet: start one with `agentdeck run`")

    run_async(go)


def show(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Show one agent."""

    async def go(settings: Settings) -> None:
        async with opened_store(settings) as store:
            a = await store.find_agent(agent)
        if as_json:
            console.print_json(json.dumps(a.to_dict()))
        else:
            console.print(agent_panel(a))

    run_async(go)


def logs(
    agent: AgentArg,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new events until the agent finishes."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print an agent's events."""

    async def go(settings: Settings) -> None:
        async with opened_store(settings) as store:
            a = await store.find_agent(agent)
            after = 0
            while True:
                batch = await store.read(agent_id=a.id, after=after, limit=1000)
                for event in batch:
                    after = event.id
                    if as_json:
                        console.print(json.dumps(event.to_dict()), soft_wrap=True)
                    else:
                        line = event_line(event)
                        if line is not None:
                            console.print(line)
                if batch:
                    continue
                if not follow:
                    return
                current = await store.get_agent(a.id)
                if not current.state.is_live:
                    return
                await asyncio.sleep(settings.command_poll_seconds)

    run_async(go)


def send(
    agent: AgentArg,
    text: Annotated[str, typer.Argument(help="The message.")],
    as_json: JsonOpt = False,
) -> None:
    """Send a follow-up. A finished agent is resumed with it and followed here."""

    async def go(settings: Settings) -> int:
        async with opened(settings) as (store, runner):
            from agentdeck.cli.follow import follow_session
            from agentdeck.runner.steering import Steering

            taken = await Steering(store, runner).send(agent, text)
            if taken is not None:
                _say(taken.to_dict(), f"sent to {taken.id} ({taken.state})", as_json)
                return 0
            session = next(iter(runner.sessions.values()))
            return await follow_session(store, session, as_json=as_json)

    raise typer.Exit(run_async(go))


def interrupt(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Interrupt an agent's current turn."""

    async def go(settings: Settings) -> None:
        async with opened(settings) as (store, runner):
            from agentdeck.runner.steering import Steering

            a = await Steering(store, runner).interrupt(agent)
        _say(a.to_dict(), f"interrupted {a.id} ({a.state})", as_json)

    run_async(go)


def kill(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Stop an agent and every process it started, now."""

    async def go(settings: Settings) -> None:
        async with opened(settings) as (store, runner):
            from agentdeck.runner.steering import Steering

            a = await Steering(store, runner).kill(agent)
        _say(a.to_dict(), f"killed {a.id} ({a.state})", as_json)

    run_async(go)


def resume(
    agent: AgentArg,
    text: Annotated[str | None, typer.Argument(help="What to say on resuming.")] = None,
    fork: Annotated[bool, typer.Option(help="Continue in a new agent; leave this one.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Resume a finished agent's Claude session in a new process."""

    async def go(settings: Settings) -> int:
        async with opened(settings) as (store, runner):
            from agentdeck.cli.follow import follow_session

            session = await runner.resume(agent, text, fork=fork)
            return await follow_session(store, session, as_json=as_json)

    raise typer.Exit(run_async(go))


def _say(data: dict[str, object], text: str, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(data))
    else:
        console.print(text)
