"""The Deck's services beside the agents: memory, notifications, users and tokens."""

from __future__ import annotations

from typing import Any

from agentdeck.core.memory import MemoryHit, Observation, SessionSummary
from agentdeck.core.notify import Notification
from agentdeck.core.roles import Role, TokenInfo, User
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.memory.projects import project_of
from agentdeck.store.notify import DeadLetter


class Services(DeckParts):
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

    # -- notifications -----------------------------------------------------------------

    def notify_targets(self) -> list[dict[str, Any]]:
        """The notification targets, with what each delivered, dropped and buried."""
        return self._notifier.describe()

    async def test_notify_target(self, name: str) -> Notification:
        """Send a test notification to ``name`` now."""
        return await self._notifier.test(name)

    async def dead_letters(
        self, *, include_replayed: bool = False, target: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Notifications that could not be delivered, newest first."""
        return await self._notifier.dead.list_letters(
            include_replayed=include_replayed, target=target, limit=limit
        )

    async def dead_letter(self, ref: str) -> DeadLetter:
        return await self._notifier.dead.find(ref)

    async def replay_dead_letter(self, ref: str) -> DeadLetter:
        """Deliver a dead letter again (once)."""
        return await self._notifier.replay(ref)

    # -- users and tokens ----------------------------------------------------------------

    async def users(self) -> list[User]:
        return await self.identity.users.list_users()

    async def add_user(self, name: str, role: Role) -> User:
        return await self.identity.add_user(name, role)

    async def remove_user(self, name: str) -> list[str]:
        """Remove a user; the ids of their tokens, revoked at once."""
        return await self.identity.remove_user(name)

    async def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        """Tokens (never their secrets)."""
        return await self.identity.users.list_tokens(user=user)

    async def create_token(
        self, user: str, *, name: str = "", expires_at: float | None = None
    ) -> tuple[TokenInfo, str]:
        """A new token of ``user``: its record and its secret (shown once)."""
        return await self.identity.create_token(user, name=name, expires_at=expires_at)

    async def revoke_token(self, ref: str) -> TokenInfo:
        return await self.identity.revoke_token(ref)
