"""The Deck's team: users and tokens, notification targets and dead letters.

In-process the caller is the machine's owner: every operation is theirs (the web
layer decides who may call which, by route: ``web.access``). A deck opened for one
command (embedded) bootstraps its users from the token file, as the daemon does at
its start, and sends no notifications: those need the daemon's notifier.
"""

from __future__ import annotations

import time

from agentdeck.core.notify_status import DeadLetter, TargetStatus, TestSent
from agentdeck.core.roles import Role, TokenInfo, User, check_user_name, parse_duration
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import DaemonUnavailable, UsageError

# Whose a token is when the caller names no one, in-process: the deck's first admin,
# the token file's (``Identity.bootstrap``). Through the API: the token's user.
OWNER = "admin"
MAX_LETTERS = 1000  # as the API's /api/notify/dead takes


class Team(DeckParts):
    _embedded: bool

    # -- users and tokens --------------------------------------------------------------

    async def _users_ready(self) -> None:
        """An embedded deck's users as the daemon would have them: a deck without
        users gets ``admin`` owning the token file's token (the daemon does it at its
        start, ``serve``)."""
        if self._embedded:
            from agentdeck.daemon.home import ensure_token

            await self.identity.bootstrap(ensure_token(self.settings))

    async def users(self) -> list[User]:
        await self._users_ready()
        return await self.identity.users.list_users()

    async def add_user(self, name: str, role: Role) -> User:
        await self._users_ready()
        return await self.identity.add_user(name, Role.parse(str(role)))

    async def remove_user(self, name: str) -> list[str]:
        """Remove a user; the ids of their tokens, revoked at once."""
        await self._users_ready()
        return await self.identity.remove_user(name)

    async def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        """Tokens (never their secrets)."""
        await self._users_ready()
        return await self.identity.users.list_tokens(user=user)

    async def create_token(
        self, user: str | None = None, *, name: str = "", expires: str | None = None
    ) -> tuple[TokenInfo, str]:
        """A new token of ``user`` (None: the owner): its record and its secret (shown
        once). The name and ``expires`` are read before anything is (``UsageError``)."""
        if user:
            check_user_name(user)
        expires_at = time.time() + parse_duration(expires) if expires else None
        await self._users_ready()
        return await self.identity.create_token(user or OWNER, name=name, expires_at=expires_at)

    async def revoke_token(self, ref: str) -> TokenInfo:
        await self._users_ready()
        return await self.identity.revoke_token(ref)

    # -- notifications -----------------------------------------------------------------

    def _notifying(self) -> None:
        if self._embedded:
            raise DaemonUnavailable(
                "no daemon is running: notifications are sent by the daemon",
                hint="start it with `agentdeck up`",
            )

    async def notify_targets(self) -> list[TargetStatus]:
        """The notification targets, with what each delivered, dropped and buried."""
        self._notifying()
        return [TargetStatus.from_dict(t) for t in self._notifier.describe()]

    async def test_notify_target(self, name: str) -> TestSent:
        """Send a test notification to ``name`` now."""
        self._notifying()
        sent = await self._notifier.test(name)
        return TestSent(target=name, kind=sent.kind)

    async def dead_letters(
        self, *, include_replayed: bool = False, target: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Notifications that could not be delivered, newest first."""
        self._notifying()
        if not 1 <= limit <= MAX_LETTERS:
            raise UsageError(f"limit must be between 1 and {MAX_LETTERS}, not {limit}")
        return await self._notifier.dead.list_letters(
            include_replayed=include_replayed, target=target, limit=limit
        )

    async def dead_letter(self, ref: str) -> DeadLetter:
        self._notifying()
        return await self._notifier.dead.find(ref)

    async def replay_dead_letter(self, ref: str) -> DeadLetter:
        """Deliver a dead letter again (once)."""
        self._notifying()
        return await self._notifier.replay(ref)
