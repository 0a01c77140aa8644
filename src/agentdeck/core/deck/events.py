"""The Deck interface's event log: read, page back, follow live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText


class EventOps(Protocol):
    """The durable event log, in commit order."""

    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        """Committed events with an id above ``after``, oldest first (one agent's
        when ``agent_id`` is given)."""
        ...

    async def events_before(
        self, *, agent_id: str | None = None, before: int | None = None, limit: int = 200
    ) -> list[StoredEvent]:
        """The newest ``limit`` events with ``id < before`` (all when None), oldest
        first: a long log paged backwards from its end."""
        ...

    async def last_event_id(self) -> int:
        """The id of the last committed event (0 for an empty log)."""
        ...

    def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """Events after ``after``, then live, in batches, until the deck stops.
        ``heartbeat`` is how often an in-process follower gets an empty batch in
        silence (a remote one may get none). A follower that fell too far behind
        gets ``core.ports.SubscriptionDropped`` with the id to resume from."""
        ...

    def follow_partial(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent | PartialText]]:
        """``follow``, with the assistant's text as it is written between the events
        (``core.partial.PartialText`` edits: never stored, at most ten a second per
        agent, some left out for a follower that reads slowly)."""
        ...
