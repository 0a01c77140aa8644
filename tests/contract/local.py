"""The daemon's Deck in-process, as the Deck interface (``core.deck.Deck``) has it.

The daemon's ``answer`` and ``answer_ask`` take who answers (``by``) as a required
argument: the web layer passes the request's user. The interface leaves it out (the
implementation knows who acts), so until the daemon's Deck gives ``by`` a default,
``LocalDeck`` gives it the one the embedded CLI records today (``user:cli``).
"""

from __future__ import annotations

from agentdeck.core.approvals import Approval, GrantScope
from agentdeck.core.asks import Ask
from agentdeck.core.deck import Deck as DeckInterface
from agentdeck.daemon.deck import Deck

# What the embedded CLI records as who answered (cli/approvals.py, cli/asks.py).
LOCAL_ACTOR = "user:cli"


class LocalDeck(Deck):
    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        by: str = LOCAL_ACTOR,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        return await super().answer(ref, decision, by=by, message=message, remember=remember)

    async def answer_ask(self, ref: str, answer: str, *, by: str = LOCAL_ACTOR) -> Ask:
        return await super().answer_ask(ref, answer, by=by)


def _is_a_deck(deck: LocalDeck) -> DeckInterface:
    """mypy proves the in-process Deck implements the interface
    (test_deck_contract.py's test_both_implementations_satisfy_the_interface runs it)."""
    return deck
