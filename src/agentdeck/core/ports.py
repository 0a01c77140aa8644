"""Ports: what the core needs from the outside world. Adapters implement them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentdeck.core.events import StoredEvent


class Subscriber(Protocol):
    """Receives events after they are committed, in id order."""

    def __call__(self, events: Sequence[StoredEvent]) -> None: ...


class SubscriptionDropped(Exception):
    """The follower fell too far behind; resume from ``position``."""

    def __init__(self, position: int) -> None:
        super().__init__(f"subscriber dropped at event {position}")
        self.position = position


class EventFeed(Protocol):
    """The committed events, live: what follows the log (the notifier, a stream)
    reads. The daemon's event hub implements it."""

    @property
    def position(self) -> int:
        """The last event id delivered to followers."""
        ...

    def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """Events after ``after`` from the log, then live; an empty list every
        ``heartbeat`` seconds of silence. Raises ``SubscriptionDropped`` for a
        follower that fell behind (it resumes from the id it reached)."""
        ...


@dataclass(frozen=True)
class Command:
    """A steering request (``interrupt``, ``send``, ``kill``...) for a live agent.

    Any client enqueues one; the process that owns the agent claims it, once.
    """

    id: int
    agent_id: str
    kind: str
    payload: dict[str, Any]
    created_at: float
    claimed_at: float | None = None
    claimed_by: str | None = None
