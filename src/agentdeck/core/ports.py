"""Ports: what the core needs from the outside world. Adapters implement them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import Event, StoredEvent


class EventLog(Protocol):
    """Append-only, monotonic. ``append`` returns once the events are durable."""

    async def append(self, events: Sequence[Event]) -> list[StoredEvent]: ...

    async def read(
        self, *, after: int = 0, agent_id: str | None = None, limit: int = 1000
    ) -> list[StoredEvent]: ...


class AgentRepository(Protocol):
    async def save_agent(self, agent: Agent) -> None: ...

    async def get_agent(self, agent_id: str) -> Agent: ...

    async def list_agents(
        self, *, states: Sequence[AgentState] | None = None, limit: int = 100, offset: int = 0
    ) -> list[Agent]: ...


class Subscriber(Protocol):
    """Receives events after they are committed, in id order."""

    def __call__(self, events: Sequence[StoredEvent]) -> None: ...


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


class CommandQueue(Protocol):
    async def enqueue_command(self, agent_id: str, kind: str, payload: dict[str, Any]) -> int: ...

    async def claim_commands(self, agent_ids: Sequence[str], claimer: str) -> list[Command]: ...
