"""``RemoteDeck``'s team: users, tokens, notification targets."""

from __future__ import annotations

from agentdeck.client.deck.agents import RemoteAgents
from agentdeck.client.deck.base import create_body
from agentdeck.client.deck.changes import RemoteChanges
from agentdeck.client.deck.events import RemoteEvents
from agentdeck.client.deck.inbox import RemoteInbox
from agentdeck.client.deck.knowledge import RemoteKnowledge
from agentdeck.client.deck.orchestration import RemoteOrchestration
from agentdeck.client.deck.schedules import RemoteSchedules
from agentdeck.client.deck.team import RemoteTeam
from agentdeck.core.deck import Deck


class RemoteDeck(
    RemoteAgents,
    RemoteEvents,
    RemoteInbox,
    RemoteChanges,
    RemoteKnowledge,
    RemoteTeam,
    RemoteOrchestration,
    RemoteSchedules,
):
    """The deck of the daemon ``http`` talks to, one part per module of this package
    (as ``core.deck``'s). It does not own ``http``'s connection unless made by
    ``connect`` (then ``aclose`` closes it)."""


def _is_a_deck(deck: RemoteDeck) -> Deck:
    """mypy proves RemoteDeck implements the Deck interface."""
    return deck


__all__ = ["RemoteDeck", "create_body"]
