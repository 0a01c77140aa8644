"""``agentdeck asks / answer``: workers' questions from a terminal.

A worker that calls ``ask_orchestrator`` waits for an answer from its
orchestrator or a person, one that calls Claude Code's ``AskUserQuestion`` for a
person's choice; these answer as the person, like the dashboard's Asks inbox.
Without a daemon the answer is written to the store, where the waiting
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
    text: Annotated[
        str,
        typer.Argument(
            help="The answer. A multiple choice takes an option's number or label, "
            "numbers or labels joined by commas where it takes several (1,3), or other "
            "text; several questions: '1=Label;2=Other text'."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Answer a worker's question; the worker goes on with the answer.

    A multiple-choice question (Claude Code's AskUserQuestion) lists its options
    numbered in `agentdeck asks`; answer with a number (`2`), a label
    (`PostgreSQL`), several where it takes more than one (`1,3`), or your own
    words. Several questions are answered at once, each by its number:
    `agentdeck answer ak12 '1=PostgreSQL;2=keep the old schema'`. An option that
    does not exist, a question left out, or an empty answer is refused (exit 2)
    and nothing is answered.
    """

    async def go(settings: Settings) -> None:
        from agentdeck.cli.decks import opened_deck

        async with opened_deck(settings) as deck:
            answered = await deck.answer_ask(ref, text)
        remote.say_answered_ask(answered.to_public(), as_json)

    run_async(go)
