"""``RemoteDeck``'s changes: diffs, checkpoints and rewinds, the merge queue."""

from __future__ import annotations

from agentdeck.client.deck.base import RemoteBase


class RemoteChanges(RemoteBase):
    pass
