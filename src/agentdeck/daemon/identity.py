"""Who is behind a request: tokens and dashboard sessions resolved to a user and a
role, cheaply, and ended at once when revoked or expired.

A token proven once (scrypt, in the store) is remembered in memory by its
fingerprint, so each later request costs one SHA-256 and a dict look-up.
Revoking a token, or removing its user, through this service forgets it here
and wakes whatever watches it (open event streams end).

Dashboard sessions are kept in the database (``store.sessions``: a SHA-256 of the
id, never the id), so every API node of a deck knows a login made on any of them,
and a restart keeps them. Each node remembers the sessions it has seen. Alone on
its database (SQLite) that memory is the truth, as it was, read once from the
database at the first session asked for: a cookie it does not know costs no
read. On a deck with several nodes a session this node never saw is read from
the database, and a remembered one is asked again once ``recheck_seconds`` old,
so a logout, a revoked token or a removed user elsewhere ends it here too.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, replace

from agentdeck.core import token_hash
from agentdeck.core.roles import Principal, Role, TokenInfo, User
from agentdeck.store.sessions import SessionStore, key_of
from agentdeck.store.users import UserStore

logger = logging.getLogger(__name__)

NO_USER = "nobody"  # what a state-changing call records when it had no user
SWEEP_SECONDS = 600.0  # a login sweeps the sessions that ended, at most this often


@dataclass(frozen=True)
class Session:
    principal: Principal  # expires_at: the earlier of the session's and the token's end
    checked_at: float = 0.0  # when the database last said so


class Identity:
    def __init__(
        self, users: UserStore, *, session_ttl: float, recheck_seconds: float | None = None
    ) -> None:
        """``recheck_seconds``: on a deck several nodes serve (PostgreSQL), another
        node may revoke a token or change a role: what this one remembers is asked
        again (by the token's id, no key derivation) once it is that old."""
        self.users = users
        self.sessions = SessionStore(users.store)
        self.session_ttl = session_ttl
        self.recheck_seconds = recheck_seconds
        self._checked: dict[str, float] = {}  # token id -> when the store last said so
        self._proven: dict[str, Principal] = {}
        self._sessions: dict[str, Session] = {}  # by key_of(session id)
        self._swept = 0.0
        self._loaded = False  # alone on the database: its sessions read once
        self._ended: dict[str, asyncio.Event] = {}
        self._ready = False
        self._lock = asyncio.Lock()

    async def bootstrap(self, file_token: str) -> User | None:
        """Once per daemon: a deck without users gets ``admin`` owning the token
        file's token (the user made is returned); on a deck with users, a token
        file's token the deck never saw is the admin's (``restore_file_token``), and
        the log says so, as it says when the token file's token cannot log in."""
        async with self._lock:
            if self._ready:
                return None
            made = await self.users.bootstrap(file_token)
            if made is None and (restored := await self.users.restore_file_token(file_token)):
                info, revoked = restored
                logger.warning(
                    "the token file's token was nobody's (an older agentdeck gave admin a "
                    "token nobody has, or the file was written anew): it is %s's now, token "
                    "%s; %s",
                    info.user,
                    info.id,
                    f"revoked the earlier token-file token(s) {', '.join(revoked)}"
                    if revoked
                    else "no earlier token-file token was left to revoke",
                )
            elif made is None and await self.by_token(file_token) is None:  # (remembered)
                logger.warning(
                    "the token file's token is revoked or expired (or its user removed): "
                    "the CLI, the TUI and the bridges of this machine cannot reach the "
                    "daemon; remove the token file and start again for a new admin token"
                )
            self._ready = True
            return made

    # -- resolving ---------------------------------------------------------------

    async def by_token(self, secret: str) -> Principal | None:
        if not secret:
            return None
        now = time.time()
        key = token_hash.fingerprint(secret)
        known = self._proven.get(key)
        if known is not None:
            if known.valid(now) and await self._still(known):
                return self._proven.get(key)
            self._forget(known.token_id)
            return None
        found = await self.users.authenticate(secret)
        if found is not None:
            self._proven[key] = found
            self._checked[found.token_id] = now
        return found

    async def by_session(self, session_id: str) -> Principal | None:
        if not session_id:
            return None
        now = time.time()
        key = key_of(session_id)
        session = self._sessions.get(key)
        recheck = self.recheck_seconds
        if session is not None and recheck is not None and now - session.checked_at >= recheck:
            session = None  # asked of the database again, below
        if session is None and self.recheck_seconds is None:
            if self._loaded:
                return None  # alone on the database: what it remembers is all there is
            await self._load(now)
            session = self._sessions.get(key)
            if session is None:
                return None
        if session is None:
            found = await self.sessions.principal_of(key, now=now)
            if found is None:
                self._sessions.pop(key, None)
                return None
            self._checked[found.token_id] = now
            self._sessions[key] = session = Session(found, now)
        if not session.principal.valid(now) or not await self._still(session.principal):
            self._sessions.pop(key, None)
            return None
        current = self._sessions.get(key)
        return current.principal if current is not None else None

    async def _load(self, now: float) -> None:
        """Alone on the database: the sessions it holds (those of before a restart)."""
        for key, principal in await self.sessions.live(now=now):
            self._sessions.setdefault(key, Session(principal, now))
            self._checked.setdefault(principal.token_id, now)
        self._loaded = True

    async def _still(self, principal: Principal) -> bool:
        """Whether a remembered principal still holds, asked of the store again on a
        deck with several nodes once ``recheck_seconds`` passed (a role changed
        elsewhere is taken on; a revoked token or a removed user forgotten)."""
        if self.recheck_seconds is None:
            return True
        now = time.time()
        token_id = principal.token_id
        if now - self._checked.get(token_id, 0.0) < self.recheck_seconds:
            return True
        current = await self.users.principal_of(token_id)
        if current is None:
            return False
        self._checked[token_id] = now
        if current.role != principal.role:
            self._proven = {
                k: replace(p, role=current.role) if p.token_id == token_id else p
                for k, p in self._proven.items()
            }
            self._sessions = {
                key: replace(v, principal=replace(v.principal, role=current.role))
                if v.principal.token_id == token_id
                else v
                for key, v in self._sessions.items()
            }
        return True

    async def login(self, secret: str) -> tuple[str, Principal] | None:
        """A new dashboard session for the token's user, or None for a bad token."""
        principal = await self.by_token(secret)
        if principal is None:
            return None
        now = time.time()
        ends = now + self.session_ttl
        if principal.expires_at is not None:
            ends = min(ends, principal.expires_at)
        principal = replace(principal, expires_at=ends)
        session_id = secrets.token_urlsafe(32)
        key = key_of(session_id)
        await self.sessions.add(key, principal, created_at=now)
        self._sessions[key] = Session(principal, now)
        if now - self._swept >= SWEEP_SECONDS:
            self._swept = now
            swept = await self.sessions.sweep(now=now)
            if swept:
                logger.info("swept %d dashboard session(s) that had ended", swept)
        return session_id, principal

    async def logout(self, session_id: str) -> None:
        """End the session on every node (on another, within ``recheck_seconds``)."""
        if not session_id:
            return
        key = key_of(session_id)
        self._sessions.pop(key, None)
        await self.sessions.remove(key)

    # -- ending ------------------------------------------------------------------

    async def ended(self, principal: Principal) -> None:
        """Returns when the principal's token is revoked or its time is up."""
        event = self._ended.setdefault(principal.token_id, asyncio.Event())
        timeout = None if principal.expires_at is None else principal.expires_at - time.time()
        if timeout is not None and timeout <= 0:
            return
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            return

    async def _end(self, token_ids: list[str]) -> None:
        """Tokens revoked here: forgotten, and their sessions gone from the database."""
        for token_id in token_ids:
            self._forget(token_id)
        await self.sessions.remove_of_tokens(token_ids)

    def _forget(self, token_id: str) -> None:
        self._checked.pop(token_id, None)
        for key in [k for k, p in self._proven.items() if p.token_id == token_id]:
            del self._proven[key]
        for sid in [s for s, v in self._sessions.items() if v.principal.token_id == token_id]:
            del self._sessions[sid]
        event = self._ended.pop(token_id, None)
        if event is not None:
            event.set()

    # -- managing (admin) ----------------------------------------------------------

    async def add_user(self, name: str, role: Role) -> User:
        return await self.users.add_user(name, role)

    async def remove_user(self, name: str) -> list[str]:
        revoked = await self.users.remove_user(name)
        await self._end(revoked)
        return revoked

    async def create_token(
        self, user: str, *, name: str = "", expires_at: float | None = None
    ) -> tuple[TokenInfo, str]:
        return await self.users.create_token(user, name=name, expires_at=expires_at)

    async def revoke_token(self, ref: str) -> TokenInfo:
        info = await self.users.revoke_token(ref)
        await self._end([info.id])
        return info
