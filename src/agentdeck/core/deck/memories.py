"""The Deck interface, memories the agents write (``core.memory_proposals``):
the Memories inbox, and the accepted memories a person may edit or withdraw.
Part of ``KnowledgeOps``."""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.memory_proposals import MemoryProposal


class MemoryReviewOps(Protocol):
    """What agents proposed with the deck's ``remember`` tool. Ids are ``mp…``
    (anything else is a ``UsageError``); an unknown one is ``NotFound``; a decision
    on a memory no longer in a state that allows it is ``InvalidState``."""

    async def memory_proposals(
        self, state: str | None = "pending", *, limit: int = 100
    ) -> list[MemoryProposal]:
        """Newest first, in ``state`` (pending | accepted | rejected | all or None);
        ``limit``: 1 to 500."""
        ...

    async def memory_proposal(self, memory_id: str) -> MemoryProposal:
        """One proposal, whatever its state."""
        ...

    async def accept_memory(self, memory_id: str) -> MemoryProposal:
        """Accept a pending memory: later agents of its template in its project are
        told it at their start."""
        ...

    async def reject_memory(self, memory_id: str) -> MemoryProposal:
        """Turn down a pending memory, or withdraw an accepted one."""
        ...

    async def edit_memory(
        self, memory_id: str, *, text: str | None = None, kind: str | None = None
    ) -> MemoryProposal:
        """Reword a pending or accepted memory (its text is checked and scrubbed as
        an agent's is), or change its kind; its state stays."""
        ...
