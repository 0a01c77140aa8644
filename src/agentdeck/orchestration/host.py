"""What the Orchestrator's parts need of it, and the error its tools raise.

``service.Orchestrator`` builds its ``Inbox`` (``inbox.py``) and ``Waits``
(``waits.py``) and hands each agent its ``deck`` tools (``tools.py``); they
reach back through ``Orchestration``, so none of them imports the service back
(a module that needs the inbox or the waits too adds them to its own Protocol).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from agentdeck.errors import Refused

if TYPE_CHECKING:
    from agentdeck.core.agent import Agent
    from agentdeck.runner.runner import Runner
    from agentdeck.runner.session import AgentSession
    from agentdeck.settings import Settings
    from agentdeck.store.store import Store


class ToolError(Refused):
    """What a deck tool tells the model went wrong (and what to do instead)."""


class Orchestration(Protocol):
    store: Store
    runner: Runner
    settings: Settings

    async def agent(self, agent_id: str) -> Agent: ...

    def session(self, agent_id: str) -> AgentSession | None: ...

    async def children(self, parent_id: str) -> list[Agent]: ...

    async def child(self, parent_id: str, ref: str) -> Agent: ...

    async def spawn(
        self,
        parent_id: str,
        prompt: str,
        *,
        template: str = ...,
        name: str | None = ...,
        workspace: str | None = ...,
        budget_usd: float | None = ...,
    ) -> Agent: ...

    async def transcript(
        self, parent_id: str, ref: str, *, since: int = ..., limit: int = ...
    ) -> str: ...

    async def send_to(self, parent_id: str, ref: str, text: str) -> Agent: ...

    async def deliver(self, agent: Agent, text: str) -> Agent: ...

    async def interrupt(self, parent_id: str, ref: str) -> Agent: ...

    async def kill(self, parent_id: str, ref: str) -> Agent: ...

    async def close_if_orphaned(self, agent: Agent) -> bool: ...

    def wake(self, agent_id: str) -> None: ...

    def waiter(self, agent_id: str) -> asyncio.Event: ...

    def unwait(self, agent_id: str, event: asyncio.Event) -> bool: ...
