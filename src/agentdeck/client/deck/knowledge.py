"""``RemoteDeck``'s knowledge: templates, the policy, memory, usage and budgets."""

from __future__ import annotations

from agentdeck.client.deck.base import RemoteBase


class RemoteKnowledge(RemoteBase):
    pass
