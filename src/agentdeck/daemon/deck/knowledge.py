"""The Deck's knowledge beside the agents: memory."""

from __future__ import annotations

from agentdeck.core.memory import MemoryHit, Observation, SessionSummary
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.memory.projects import project_of


class Knowledge(DeckParts):
    # -- memory ----------------------------------------------------------------------

    @staticmethod
    def memory_project(path: str | None) -> str | None:
        """A project filter as memory stores it (the main worktree's directory)."""
        return project_of(path) if path else None

    async def memory_search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        """Ranked full-text search; ``project`` as ``memory_project`` gives it."""
        return await self._memory.search(query, project=project, limit=limit)

    @staticmethod
    def memory_text(record: Observation | SessionSummary) -> str:
        """A whole record, readable: a header of facts, then its text."""
        from agentdeck.memory.mcp_server import record_text

        return record_text(record)

    async def memory_stats(self) -> dict[str, int]:
        return await self._memory.stats()

    async def memory_record(self, memory_id: str) -> Observation | SessionSummary:
        """One whole record; ``NotFound`` for an unknown id."""
        return await self._memory.get(memory_id)

    async def forget_memory(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        """Delete one record, a session's or a project's; how many went."""
        return await self._memory.forget(
            memory_id=memory_id, session_id=session_id, project=project
        )
