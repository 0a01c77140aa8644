"""``agentdeck approvals / approve / deny``: the approval inbox from a terminal."""

from __future__ import annotations

from typing import Annotated

import typer

from agentdeck.cli import reads, remote
from agentdeck.cli.context import run_async
from agentdeck.cli.wire import wired
from agentdeck.core.approvals import GrantScope
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
IdArg = Annotated[str, typer.Argument(help="Approval request id (or a unique prefix).")]
AlwaysOpt = Annotated[bool, typer.Option("--always", help="Remember the answer as a grant.")]
ScopeOpt = Annotated[
    GrantScope, typer.Option(help="With --always: this agent's session, or from now on.")
]


def register(app: typer.Typer) -> None:
    app.command("approvals")(approvals)
    app.command("approve")(approve)
    app.command("deny")(deny)


def approvals(
    all_: Annotated[bool, typer.Option("--all", help="Answered ones too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List approval requests waiting for an answer."""
    raise typer.Exit(wired(lambda deck: reads.approvals(deck, all_, as_json)))


def approve(
    ref: IdArg,
    always: AlwaysOpt = False,
    scope: ScopeOpt = GrantScope.PERSISTENT,
    message: Annotated[str | None, typer.Option(help="A note for the agent.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Allow the tool call. With --always, calls matching the same rule are allowed
    from now on (or for this agent's session, with --scope session)."""
    _answer(ref, "allow", message, GrantScope(scope) if always else None, as_json)


def deny(
    ref: IdArg,
    reason: Annotated[str | None, typer.Option(help="Told to the agent.")] = None,
    always: AlwaysOpt = False,
    scope: ScopeOpt = GrantScope.PERSISTENT,
    as_json: JsonOpt = False,
) -> None:
    """Deny the tool call; the reason is passed to the agent."""
    _answer(ref, "deny", reason, GrantScope(scope) if always else None, as_json)


def _answer(
    ref: str, decision: str, message: str | None, remember: GrantScope | None, as_json: bool
) -> None:
    async def go(settings: Settings) -> None:
        from agentdeck.cli.decks import opened_deck

        # No daemon: the Deck embedded answers in the store; the waiting `agentdeck
        # run` sees it there.
        async with opened_deck(settings) as deck:
            answered = await deck.answer(ref, decision, message=message, remember=remember)
        remote.say_answered(answered.to_dict(), as_json)

    run_async(go)
