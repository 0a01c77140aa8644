"""``RemoteDeck``'s team: ``/api/users``, ``/api/tokens``, ``/api/notify``.

The token's role decides what the daemon lets it do (``web.access``): users and
tokens need ``admin``, a test or a replay ``operator``; short of it the call is
``Forbidden``, as the API answers.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentdeck.client.deck.base import RemoteBase, field
from agentdeck.core.notify_status import DeadLetter, TargetStatus, TestSent
from agentdeck.core.roles import Role, TokenInfo, User
from agentdeck.errors import NotFound


def _path(prefix: str, kind: str, ref: str, action: str | None = None) -> str:
    """``<prefix>/<ref>[/<action>]``, the ref quoted whole (a ``/`` or ``?`` in it
    names no other route). An empty ref names nothing (its path would be the list's)."""
    if not ref:
        raise NotFound(kind, ref)
    path = f"{prefix}/{quote(ref, safe='')}"
    return f"{path}/{action}" if action else path


class RemoteTeam(RemoteBase):
    # -- users and tokens --------------------------------------------------------------

    async def users(self) -> list[User]:
        answer = await self.http.call("GET", "/api/users")
        return [User.from_dict(u) for u in field(answer, "users")]

    async def add_user(self, name: str, role: Role) -> User:
        body = {"name": name, "role": str(Role.parse(str(role)))}
        return User.from_dict(await self.http.call("POST", "/api/users", json=body))

    async def remove_user(self, name: str) -> list[str]:
        answer = await self.http.call("DELETE", _path("/api/users", "user", name))
        return [str(t) for t in field(answer, "revoked_tokens")]

    async def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        params = {"user": user} if user is not None else {}
        answer = await self.http.call("GET", "/api/tokens", params=params)
        return [TokenInfo.from_dict(t) for t in field(answer, "tokens")]

    async def create_token(
        self, user: str | None = None, *, name: str = "", expires: str | None = None
    ) -> tuple[TokenInfo, str]:
        body = {"user": user, "name": name, "expires": expires}
        made = await self.http.call("POST", "/api/tokens", json=body)
        return TokenInfo.from_dict(made), str(field(made, "token"))

    async def revoke_token(self, ref: str) -> TokenInfo:
        answer = await self.http.call("DELETE", _path("/api/tokens", "token", ref))
        return TokenInfo.from_dict(answer)

    # -- notifications -----------------------------------------------------------------

    async def notify_targets(self) -> list[TargetStatus]:
        answer = await self.http.call("GET", "/api/notify/targets")
        return [TargetStatus.from_dict(t) for t in field(answer, "targets")]

    async def test_notify_target(self, name: str) -> TestSent:
        path = _path("/api/notify/targets", "notification target", name, "test")
        return TestSent.from_dict(await self.http.call("POST", path))

    async def dead_letters(
        self, *, include_replayed: bool = False, target: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        params: dict[str, Any] = {"all": include_replayed, "limit": limit}
        if target is not None:
            params["target"] = target
        answer = await self.http.call("GET", "/api/notify/dead", params=params)
        return [DeadLetter.from_dict(d) for d in field(answer, "dead")]

    async def dead_letter(self, ref: str) -> DeadLetter:
        path = _path("/api/notify/dead", "dead letter", ref)
        return DeadLetter.from_dict(await self.http.call("GET", path))

    async def replay_dead_letter(self, ref: str) -> DeadLetter:
        path = _path("/api/notify/dead", "dead letter", ref, "replay")
        return DeadLetter.from_dict(await self.http.call("POST", path))
