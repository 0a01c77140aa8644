"""The Deck's Memories inbox (``core.deck.memories``): what agents proposed with
the ``remember`` tool, decided here by a person (``memory.proposals``)."""

from __future__ import annotations

from agentdeck.core.memory_proposals import MemoryProposal
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.memory.proposals import Proposals

LOCAL_ACTOR = "user:cli"  # as daemon.deck.inbox's: who acts in-process


class MemoryReview(DeckParts):
    @property
    def _proposals(self) -> Proposals:
        return Proposals(self._store)

    async def memory_proposals(
        self, state: str | None = "pending", *, limit: int = 100
    ) -> list[MemoryProposal]:
        return await self._proposals.listed(state, limit)

    async def memory_proposal(self, memory_id: str) -> MemoryProposal:
        return await self._proposals.get(memory_id)

    async def accept_memory(self, memory_id: str, *, by: str = LOCAL_ACTOR) -> MemoryProposal:
        return await self._proposals.accept(memory_id, by=by)

    async def reject_memory(self, memory_id: str, *, by: str = LOCAL_ACTOR) -> MemoryProposal:
        return await self._proposals.reject(memory_id, by=by)

    async def edit_memory(
        self, memory_id: str, *, text: str | None = None, kind: str | None = None
    ) -> MemoryProposal:
        return await self._proposals.edit(memory_id, text=text, kind=kind)
