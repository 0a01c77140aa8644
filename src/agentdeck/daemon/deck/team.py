"""The Deck's team: notification targets, users and tokens."""

from __future__ import annotations

from typing import Any

from agentdeck.core.notify import Notification
from agentdeck.core.roles import Role, TokenInfo, User
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.store.notify import DeadLetter


class Team(DeckParts):
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
