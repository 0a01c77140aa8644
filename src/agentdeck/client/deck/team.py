"""``RemoteDeck``'s team: users, tokens, notification targets."""

from __future__ import annotations

from agentdeck.client.deck.base import RemoteBase


class RemoteTeam(RemoteBase):
    pass
