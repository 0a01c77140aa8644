"""Ports: what the core needs from the outside world. Adapters implement them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

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
