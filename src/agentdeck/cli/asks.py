"""``agentdeck asks / answer``: workers' questions from a terminal.

A worker that calls ``ask_orchestrator`` waits for an answer from its
orchestrator or a person; these answer as the person, like the dashboard's Asks
inbox. Without a daemon the answer is written to the store, where the waiting
``agentdeck run`` finds it.
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer
from rich.table import Table

from agentdeck.cli.client import connect
from agentdeck.cli.context import console, opened_orchestrator, opened_store, run_async
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.summary import short
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(app: typer.Typer) -> None:
    app.command("asks")(asks)
    app.command("answer")(answer)


def asks(
    all_: Annotated[bool, typer.Option("--all", help="Answered and expired ones too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List workers' questions waiting for an answer."""
    states: list[AskState] = [*AskState] if all_ else [AskState.PENDING]

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            try:
                params = {"state": [str(s) for s in states]}
                data = await client.call("GET", "/api/asks", params=params)
                items = [Ask.from_dict(a) for a in data["asks"]]
            finally:
                await client.aclose()
        else:
            async with opened_store(settings) as store:
                from agentdeck.store.asks import AskStore

                items = await AskStore(store).list_asks(states=states)
        if as_json:
            console.print_json(json.dumps([a.to_dict() for a in items]))
        elif not items:
            console.print("no questions waiting")
        else:
            console.print(_table(items))

    run_async(go)


def answer(
    ref: Annotated[str, typer.Argument(help="The question's id (or a unique prefix).")],
    text: Annotated[str, typer.Argument(help="The answer.")],
    as_json: JsonOpt = False,
) -> None:
    """Answer a worker's question; the worker goes on with the answer."""

    async def go(settings: Settings) -> None:
        client = await connect(settings)
        if client is not None:
            try:
                data = await client.call("POST", f"/api/asks/{ref}", json={"answer": text})
                answered = Ask.from_dict(data)
            finally:
                await client.aclose()
        else:
            async with opened_orchestrator(settings) as orchestration:
                answered = await orchestration.inbox.answer(ref, text, by="user:cli")
        if as_json:
            console.print_json(json.dumps(answered.to_dict()))
        else:
            console.print(f"answered {answered.id} (asked by agent {answered.agent_id})")

    run_async(go)


def _table(items: list[Ask]) -> Table:
    table = Table(box=None, pad_edge=False)
    for col in ("ID", "AGENT", "TO", "QUESTION", "STATE", "EXPIRES"):
        table.add_column(col)
    now = time.time()
    for a in items:
        left = f"{int(a.expires_at - now)}s" if a.state.is_open else "-"
        table.add_row(
            a.id,
            a.agent_id,
            a.to_agent_id or "a person",
            short(a.text, 70),
            str(a.state) if not a.answer else f"{a.state}: {short(a.answer, 30)}",
            left,
        )
    return table
