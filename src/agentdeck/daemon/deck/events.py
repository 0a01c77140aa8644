"""The Deck's event log: pages of it, the live feed, totals, budget warnings."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agentdeck.core.audit import AuditEntry, AuditRecord
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.store.reads import StoreStats


class Events(DeckParts):
    async def events(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]:
        """Committed events after ``after``, oldest first; ``agent_id`` names an agent
        as a ref does (``NotFound`` for none)."""
        return await self._of_agent(
            agent_id, lambda a: self._store.read(after=after, agent_id=a, limit=limit)
        )

    async def events_before(
        self, *, agent_id: str | None = None, before: int | None = None, limit: int = 200
    ) -> list[StoredEvent]:
        """The newest ``limit`` events with ``id < before`` (all when None), oldest first;
        ``agent_id`` names an agent as a ref does (``NotFound`` for none)."""
        return await self._of_agent(
            agent_id, lambda a: self._store.read_tail(agent_id=a, before=before, limit=limit)
        )

    async def last_event_id(self) -> int:
        return await self._store.last_event_id()

    @property
    def event_position(self) -> int:
        """The last event id delivered to the live feed's followers."""
        return self._hub.position

    @property
    def followers(self) -> int:
        """How many follow the live feed now (streams, the notifier)."""
        return self._hub.subscriber_count

    def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """Events after ``after`` from the log, then live (``core.ports.EventFeed``)."""
        return self._hub.follow(after=after, agent_id=agent_id, heartbeat=heartbeat)

    def follow_partial(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent | PartialText]]:
        """``follow`` with the text being written between the events."""
        return self._hub.follow_partial(after=after, agent_id=agent_id, heartbeat=heartbeat)

    async def stats(self) -> StoreStats:
        return await self._store.stats()

    @property
    def refused_transitions(self) -> dict[str, int]:
        """Illegal agent state changes asked for in this process and refused (never
        written), by ``old -> new``: a non-zero count is a bug to report."""
        return self._runner.refused_transitions

    async def audit(self, record: AuditRecord) -> AuditEntry:
        """One more entry in the audit log's hash chain."""
        return await self._store.append_audit(record)

    async def budget_warnings(self, since: float) -> list[dict[str, object]]:
        return await self._usage_records.warnings(since)
