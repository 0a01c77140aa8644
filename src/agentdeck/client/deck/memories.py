"""``RemoteDeck``'s Memories inbox (``/api/memories``): the same checks as the
daemon's Deck before the call, so a bad id or state is the same ``UsageError``."""

from __future__ import annotations

from typing import Any

from agentdeck.client.deck.base import RemoteBase, field
from agentdeck.core.memory_proposals import (
    LIST_MAX,
    MemoryProposal,
    checked_id,
    checked_state,
    checked_text,
)
from agentdeck.errors import UsageError


def _path(memory_id: str, action: str | None = None) -> str:
    path = f"/api/memories/{checked_id(memory_id)}"
    return f"{path}/{action}" if action else path


class RemoteMemories(RemoteBase):
    async def memory_proposals(
        self, state: str | None = "pending", *, limit: int = 100
    ) -> list[MemoryProposal]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIST_MAX:
            raise UsageError(f"a limit is 1 to {LIST_MAX}, not {limit!r}")
        wanted = checked_state(state)
        params = {"state": str(wanted) if wanted is not None else "all", "limit": limit}
        answer = await self.http.call("GET", "/api/memories", params=params)
        return [MemoryProposal.from_dict(m) for m in field(answer, "memories")]

    async def memory_proposal(self, memory_id: str) -> MemoryProposal:
        return MemoryProposal.from_dict(await self.http.call("GET", _path(memory_id)))

    async def accept_memory(self, memory_id: str) -> MemoryProposal:
        answer = await self.http.call("POST", _path(memory_id, "accept"))
        return MemoryProposal.from_dict(answer)

    async def reject_memory(self, memory_id: str) -> MemoryProposal:
        answer = await self.http.call("POST", _path(memory_id, "reject"))
        return MemoryProposal.from_dict(answer)

    async def edit_memory(
        self, memory_id: str, *, text: str | None = None, kind: str | None = None
    ) -> MemoryProposal:
        body: dict[str, Any] = {}
        if text is not None:
            checked_text(text)  # the daemon's Deck's check, so the same error both ways
            body["text"] = text
        if kind is not None:
            body["kind"] = kind
        answer = await self.http.call("PATCH", _path(memory_id), json=body)
        return MemoryProposal.from_dict(answer)
