"""What every part of the Deck works with: its collaborators, private to it.

The Deck's areas (agents, inbox, changes, events, memory, team and notify,
settings-backed look-ups) are mixins over these; a client (the web layer, the
CLI's embedded mode) calls their methods and never reaches the collaborators.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from agentdeck.core.agent import Agent

if TYPE_CHECKING:
    from agentdeck.daemon.hub import EventHub
    from agentdeck.daemon.identity import Identity
    from agentdeck.hooks.bridge import HookBridge
    from agentdeck.notify.service import Notifier
    from agentdeck.orchestration.service import Orchestrator
    from agentdeck.runner.runner import Runner
    from agentdeck.runner.steering import Steering
    from agentdeck.settings import Settings
    from agentdeck.store.memory import MemoryStore
    from agentdeck.store.store import Store
    from agentdeck.store.usage import UsageStore

T = TypeVar("T")


class DeckParts:
    settings: Settings
    identity: Identity  # the users and tokens the web layer authenticates against
    _hooks: HookBridge
    _memory: MemoryStore
    _store: Store
    _runner: Runner
    _hub: EventHub
    _steering: Steering
    _orchestration: Orchestrator
    _notifier: Notifier
    _usage_records: UsageStore
    _embedded: bool  # one command's deck (the CLI without a daemon), not a daemon's

    async def _agent_id(self, ref: str) -> str:
        """The id of the agent ``ref`` names (``NotFound`` for none, as the API
        answers); a live session's without asking the store."""
        if ref in self._runner.sessions:
            return ref
        return (await self._store.find_agent(ref)).id

    async def _of_agent(
        self, ref: str | None, read: Callable[[str | None], Awaitable[list[T]]]
    ) -> list[T]:
        """``read`` of the agent ``ref`` names (of every agent when None), as the API
        answers: ``NotFound`` for no agent, an id prefix or a name as good as the id.

        Read by ``ref`` as an id first and look it up only when nothing comes back:
        only an agent has events or questions (agents are never deleted), so a read
        that finds some costs what it did, not one more trip to the store."""
        if ref is None:
            return await read(None)
        found = await read(ref)
        if found:
            return found
        agent_id = await self._agent_id(ref)
        return await read(agent_id) if agent_id != ref else found

    def _fresh(self, agent: Agent) -> Agent:
        """The live session's view of the agent when it runs here."""
        session = self._runner.sessions.get(agent.id)
        return session.agent if session is not None else agent
