"""``agentdeck asks / answer``: workers' questions from a terminal.

A worker that calls ``ask_orchestrator`` waits for an answer from its
orchestrator or a person; these answer as the person, like the dashboard's Asks
inbox. Without a daemon the answer is written to the store, where the waiting
``agentdeck run`` finds it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli import reads, remote
from agentdeck.cli.context import run_async
from agentdeck.cli.wire import wired
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
    raise typer.Exit(wired(lambda deck: reads.asks(deck, all_, as_json)))


def answer(
    ref: Annotated[str, typer.Argument(help="The question's id (or a unique prefix).")],
    text: Annotated[str, typer.Argument(help="The answer.")],
    as_json: JsonOpt = False,
) -> None:
    """Answer a worker's question; the worker goes on with the answer."""

    async def go(settings: Settings) -> None:
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings) as deck:
            answered = await deck.answer_ask(ref, text)
        remote.say_answered_ask(answered.to_dict(), as_json)

    run_async(go)
