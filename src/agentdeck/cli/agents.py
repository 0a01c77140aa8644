"""Steering commands: ls, show, logs, send, interrupt, kill, resume.

Each goes through the daemon when one runs for this home, and works embedded
(straight on the store, with a local runner) when none does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated

import typer

from agentdeck.cli.client import DaemonClient, connect
from agentdeck.cli.context import console, opened, opened_orchestrator, opened_store, run_async
from agentdeck.cli.render import agent_panel, agents_table, event_line, tree_table, unsupervised
from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import StoredEvent
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


async def find(settings: Settings, ref: str) -> Agent:
    """The agent ``ref`` names (id, id prefix or name), through the daemon if it runs."""
    client = await connect(settings)
    if client is not None:
        async with _closing(client):
            return await client.get_agent(ref)
    async with opened_store(settings) as store:
        return await store.find_agent(ref)


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
    tree: Annotated[
        bool,
        typer.Option(
            "--tree", help="Agents an orchestrator started under it, with the tree's cost."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List agents, newest first."""
    states = _states(state)
    if tree and states:
        raise UsageError("--tree shows every state; leave out --state")

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                if tree:
                    agents = await client.tree(limit=limit)
                else:
                    agents = await client.list_agents(states=states, limit=limit)
        else:
            async with opened_store(settings) as store:
                if tree:
                    roots = await store.list_agents(limit=limit, roots=True)
                    agents = roots + await store.descendants([a.id for a in roots])
                else:
                    agents = await store.list_agents(states=states, limit=limit)
        # Without a daemon nobody reconciled the store: say which live agents have no
        # supervisor any more (a daemon's answers are reconciled already).
        orphans = unsupervised(agents) if client is None else set()
        if as_json:
            rows = [a.to_dict() | ({"supervisor_gone": True} if a.id in orphans else {})
                    for a in agents]  # fmt: skip
            console.print_json(json.dumps(rows))
        elif agents and tree:
            console.print(tree_table(agents))
        elif agents:
            console.print(agents_table(agents, orphans))
        else:
            console.print("no agents yet: start one with `agentdeck run`")
        if orphans and not as_json:
            console.print(
                f"{len(orphans)} agent(s) shown live have no supervisor: `agentdeck up` "
                "reconciles them (an agent that resumes on restart carries on)",
                markup=False, highlight=False,
            )  # fmt: skip

    run_async(go)


def show(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Show one agent, its parent and its children."""

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                a = await client.get_agent(agent)
                children = await client.children(a.id)
        else:
            async with opened_store(settings) as store:
                a = await store.find_agent(agent)
                children = await store.children([a.id])
        if as_json:
            console.print_json(json.dumps({**a.to_dict(), "children": [c.id for c in children]}))
            return
        console.print(agent_panel(a))
        if children:
            console.print()
            console.print(f"children ({len(children)}):")
            console.print(agents_table(children))

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

    def emit(event: StoredEvent) -> None:
        if as_json:
            console.print(json.dumps(event.to_dict()), soft_wrap=True)
        else:
            line = event_line(event)
            if line is not None:
                console.print(line)

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                await _remote_logs(client, agent, follow, emit)
            return
        async with opened_store(settings) as store:
            a = await store.find_agent(agent)
            after = 0
            finished = not follow
            while True:
                batch = await store.read(agent_id=a.id, after=after, limit=1000)
                for event in batch:
                    after = event.id
                    emit(event)
                if batch:
                    continue
                if finished:
                    return
                # The final state is committed with its events: once the row says
                # finished, one more read gets everything, then we stop.
                finished = not (await store.get_agent(a.id)).state.is_live
                if not finished:
                    await asyncio.sleep(settings.command_poll_seconds)

    run_async(go)


async def _remote_logs(
    client: DaemonClient, ref: str, follow: bool, emit: Callable[[StoredEvent], None]
) -> None:
    a = await client.get_agent(ref)
    # Read the state first: what is committed after it is in the log we read next.
    live = follow and a.state.is_live
    after = 0
    while batch := await client.events(agent_id=a.id, after=after):
        for event in batch:
            after = event.id
            emit(event)
    if not live:
        return
    async for event in client.stream(agent_id=a.id, after=after):
        emit(event)
        if event.type == "state_changed" and AgentState(event.data["new"]).is_final:
            return


def send(
    agent: AgentArg,
    text: Annotated[str, typer.Argument(help="The message.")],
    as_json: JsonOpt = False,
) -> None:
    """Send a follow-up and follow the turn. A finished agent is resumed with it."""

    async def go(settings: Settings) -> int:
        from agentdeck.cli.follow import follow_remote, follow_session

        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                a = await client.get_agent(agent)
                mark = await _last_id(client, a.id)
                a = await client.act(a.id, "messages", {"text": text})
                return await follow_remote(
                    client, a.id, after=mark, as_json=as_json, until_turn=True
                )
        async with opened(settings) as (store, runner):
            from agentdeck.runner.steering import Steering

            taken = await Steering(store, runner).send(agent, text)
            if taken is not None:
                _say(taken, f"sent to {taken.id} ({taken.state})", as_json)
                return 0
            session = next(iter(runner.sessions.values()))
            return await follow_session(store, session, as_json=as_json)

    raise typer.Exit(run_async(go))


def interrupt(agent: AgentArg, as_json: JsonOpt = False) -> None:
    """Interrupt an agent's current turn."""
    _act(agent, "interrupt", "interrupted", as_json)


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


def _act(
    ref: str, action: str, done: str, as_json: bool, body: dict[str, object] | None = None
) -> None:
    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                a = await client.act(ref, action, body)
        elif action == "interrupt":
            async with opened(settings) as (store, runner):
                from agentdeck.runner.steering import Steering

                a = await Steering(store, runner).interrupt(ref)
        else:
            async with opened_orchestrator(settings) as orchestration:
                found = await orchestration.store.find_agent(ref)
                children = bool((body or {}).get("children", True))
                a = await orchestration.kill_tree(found, children=children)
        _say(a, f"{done} {a.id} ({a.state})", as_json)

    run_async(go)


def resume(
    agent: AgentArg,
    text: Annotated[str | None, typer.Argument(help="What to say on resuming.")] = None,
    fork: Annotated[bool, typer.Option(help="Continue in a new agent; leave this one.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Resume a finished agent's Claude session in a new process."""

    async def go(settings: Settings) -> int:
        from agentdeck.cli.follow import follow_remote, follow_session

        client = await connect(settings)
        if client is not None:
            async with _closing(client):
                a = await client.get_agent(agent)
                mark = 0 if fork else await _last_id(client, a.id)
                a = await client.act(a.id, "resume", {"text": text, "fork": fork})
                return await follow_remote(
                    client, a.id, after=mark, as_json=as_json, until_turn=True
                )
        async with opened(settings) as (store, runner):
            session = await runner.resume(agent, text, fork=fork)
            return await follow_session(store, session, as_json=as_json)

    raise typer.Exit(run_async(go))


async def _last_id(client: DaemonClient, agent_id: str) -> int:
    """Where the log ends now: follow only what comes after."""
    return int((await client.stats())["last_event_id"])


class _closing:
    def __init__(self, client: DaemonClient) -> None:
        self.client = client

    async def __aenter__(self) -> DaemonClient:
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()


def _say(agent: Agent, text: str, as_json: bool) -> None:
    if as_json:
        console.print_json(json.dumps(agent.to_dict()))
    else:
        console.print(text)
