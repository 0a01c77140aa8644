"""The Deck interface, who shares the deck: users, tokens, notification targets.

Who may do these is the API's business: through the daemon users and tokens need
the ``admin`` role, a test or a replay the ``operator`` role, and a token short of
it is refused (``Forbidden``); in-process the local user is the machine's owner.
"""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.notify_status import DeadLetter, TargetStatus, TestSent
from agentdeck.core.roles import Role, TokenInfo, User


class TeamOps(Protocol):
    """Who shares the deck: users, tokens, notification targets."""

    # users

    async def users(self) -> list[User]:
        """Users, by name."""
        ...

    async def add_user(self, name: str, role: Role) -> User:
        """A new user (``UsageError`` for a name that is not lower-case letters,
        digits, ``_ . -`` starting with a letter, at most 64; ``Refused`` if taken)."""
        ...

    async def remove_user(self, name: str) -> list[str]:
        """Remove a user: the ids of their tokens, revoked at once (``Refused`` for
        the last admin)."""
        ...

    # tokens

    async def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        """Tokens, of one user if given: never their secrets."""
        ...

    async def create_token(
        self, user: str | None = None, *, name: str = "", expires: str | None = None
    ) -> tuple[TokenInfo, str]:
        """A new token of ``user`` (None: the caller: the token's user through the
        API, the owner ``admin`` in-process), living ``expires`` (``30d``, ``12h``;
        None: until revoked): its record and its secret, given this once only."""
        ...

    async def revoke_token(self, ref: str) -> TokenInfo:
        """Revoke a token (its id or a unique prefix): refused from now on."""
        ...

    # notifications

    async def notify_targets(self) -> list[TargetStatus]:
        """The configured notification targets and how their deliveries went."""
        ...

    async def test_notify_target(self, name: str) -> TestSent:
        """One test notification to ``name`` now, no retry (``DeliveryFailed`` if the
        target does not take it)."""
        ...

    async def dead_letters(
        self, *, include_replayed: bool = False, target: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Notifications that were not delivered, newest first (``limit``: 1 to 1000)."""
        ...

    async def dead_letter(self, ref: str) -> DeadLetter: ...

    async def replay_dead_letter(self, ref: str) -> DeadLetter:
        """Deliver a dead letter again, now, once: ``replayed`` if it goes through
        (``DeliveryFailed`` if not, one attempt more; ``Refused`` if replayed already)."""
        ...
