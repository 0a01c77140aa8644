"""Memory in the store: observations, session summaries and their FTS5 index
(migration 0003). Writes go through the store's one write path.

Interface first; the bodies are being written (issue 5).
"""

from __future__ import annotations

from agentdeck.core.memory import MemoryHit, Observation, SessionSummary
from agentdeck.store.store import Store


class MemoryStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add_observation(self, observation: Observation) -> None:
        """Keep one observation and index it."""
        raise NotImplementedError

    async def save_summary(self, summary: SessionSummary) -> SessionSummary:
        """Keep a session's summary, replacing the session's earlier one (its id
        is kept, so links stay valid); returns what was stored."""
        raise NotImplementedError

    async def search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        """Ranked full-text search over observations and summaries. Any text is a
        valid query (punctuation is not FTS syntax here); an empty one finds nothing."""
        raise NotImplementedError

    async def get(self, memory_id: str) -> Observation | SessionSummary:
        """One record; ``NotFound`` for an unknown id."""
        raise NotImplementedError

    async def forget(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        """Delete one record, a session's or a project's (index included);
        returns how many records went. Exactly one selector must be given."""
        raise NotImplementedError

    async def session_observations(self, session_id: str, limit: int = 500) -> list[Observation]:
        """A session's observations, oldest first."""
        raise NotImplementedError

    async def recent_summaries(self, project: str, limit: int = 10) -> list[SessionSummary]:
        """A project's newest session summaries, newest first."""
        raise NotImplementedError

    async def recent_observations(self, project: str, limit: int = 50) -> list[Observation]:
        """A project's newest observations, newest first."""
        raise NotImplementedError

    async def stats(self) -> dict[str, int]:
        """``{"observations": N, "summaries": M, "projects": P}``."""
        raise NotImplementedError
