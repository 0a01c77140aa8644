"""The Deck interface's inbox: approvals (tool calls the policy asks a person
about) and asks (questions workers put to a person or their orchestrator)."""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState


class InboxOps(Protocol):
    """Approvals and asks, by their id or a unique id prefix."""

    # approvals

    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Requests in ``states`` (None: every state), of one agent if given."""
        ...

    async def approval(self, ref: str) -> Approval: ...

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        """``allow`` or ``deny`` a pending request; ``message`` goes to the agent,
        ``remember`` keeps the answer as a grant (``InvalidState`` if it was
        already answered)."""
        ...

    # asks

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        """Questions in ``states`` (None: every state), asked by one agent if given."""
        ...

    async def ask(self, ref: str) -> Ask: ...

    async def answer_ask(self, ref: str, answer: str) -> Ask:
        """Answer a worker's question; the worker goes on with it."""
        ...
