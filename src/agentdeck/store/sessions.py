"""The dashboard's sessions in the store (the table of migration 0016), so a login
on one API node opens the dashboard on every node of the deck.

A session is found by ``key_of(session id)``, a SHA-256: the id is 32 random
bytes, so a hash needs no salt or key derivation, and a copy of the database
(or a look over an operator's shoulder at it) gives no cookie that logs in.
What a session resolves to is read with its token and its user, so a token
revoked or a user removed ends the session wherever it is asked, and a role
changed is the session's new role.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.roles import Principal, Role
from agentdeck.store.schema import tokens, users
from agentdeck.store.schema_sessions import dashboard_sessions
from agentdeck.store.store import Store


def key_of(session_id: str) -> str:
    """What the database keeps of a session id."""
    return hashlib.sha256(b"agentdeck-session-v1:" + session_id.encode()).hexdigest()


class SessionStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, key: str, principal: Principal, *, created_at: float) -> None:
        """A new session for ``principal``, ending at its ``expires_at`` (required)."""
        if principal.expires_at is None:
            raise ValueError("a dashboard session always ends")
        row = {
            "key": key,
            "user_name": principal.user,
            "token_id": principal.token_id,
            "created_at": created_at,
            "expires_at": principal.expires_at,
        }

        def op(conn: Connection) -> None:
            conn.execute(sa.insert(dashboard_sessions).values(row))

        await self.store._write(op)

    async def principal_of(self, key: str, *, now: float | None = None) -> Principal | None:
        """Who session ``key`` is now: None when there is no such session, or it
        expired, or its token is revoked or expired, or its user removed."""
        now = time.time() if now is None else now

        def query(conn: Connection) -> Any:
            stmt = (
                sa.select(
                    dashboard_sessions.c.user_name,
                    dashboard_sessions.c.token_id,
                    dashboard_sessions.c.expires_at,
                    tokens.c.user_name.label("token_user"),
                    tokens.c.revoked_at,
                    tokens.c.expires_at.label("token_expires_at"),
                    users.c.role,
                )
                .join(tokens, tokens.c.id == dashboard_sessions.c.token_id, isouter=True)
                .join(users, users.c.name == dashboard_sessions.c.user_name, isouter=True)
                .where(dashboard_sessions.c.key == key)
            )
            return conn.execute(stmt).first()

        row = await self.store._read(query)
        if row is None or row.expires_at <= now or row.role is None:
            return None
        if row.token_user != row.user_name or row.revoked_at is not None:
            return None  # (a token of another user: never made so; refused all the same)
        if row.token_expires_at is not None and row.token_expires_at <= now:
            return None
        return Principal(
            user=row.user_name, role=Role(row.role), token_id=row.token_id,
            expires_at=row.expires_at,
        )  # fmt: skip

    async def live(self, *, now: float | None = None) -> list[tuple[str, Principal]]:
        """Every session that can still log in, by key (what a node alone on its
        database remembers from its start on)."""
        now = time.time() if now is None else now

        def query(conn: Connection) -> list[Any]:
            stmt = (
                sa.select(dashboard_sessions, users.c.role)
                .join(tokens, tokens.c.id == dashboard_sessions.c.token_id)
                .join(users, users.c.name == dashboard_sessions.c.user_name)
                .where(
                    dashboard_sessions.c.expires_at > now,
                    tokens.c.user_name == dashboard_sessions.c.user_name,
                    tokens.c.revoked_at.is_(None),
                    sa.or_(tokens.c.expires_at.is_(None), tokens.c.expires_at > now),
                )
            )
            return list(conn.execute(stmt))

        return [
            (row.key, Principal(
                user=row.user_name, role=Role(row.role), token_id=row.token_id,
                expires_at=row.expires_at,
            ))
            for row in await self.store._read(query)
        ]  # fmt: skip

    async def remove(self, key: str) -> bool:
        """End one session (a logout); whether there was one."""

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.delete(dashboard_sessions).where(dashboard_sessions.c.key == key)
            )
            return bool(result.rowcount)

        return bool(await self.store._write(op))

    async def remove_of_tokens(self, token_ids: list[str]) -> int:
        """End every session logged in with these tokens (revoked); how many."""
        if not token_ids:
            return 0

        def op(conn: Connection) -> int:
            result = conn.execute(
                sa.delete(dashboard_sessions).where(dashboard_sessions.c.token_id.in_(token_ids))
            )
            return int(result.rowcount)

        return int(await self.store._write(op))

    async def sweep(self, *, now: float | None = None) -> int:
        """Delete the sessions that can no longer log in: expired, or of a token
        revoked (a user removed has their tokens revoked) or gone; how many."""
        now = time.time() if now is None else now
        revoked = sa.select(tokens.c.id).where(tokens.c.revoked_at.is_not(None))
        known = sa.select(tokens.c.id)

        def op(conn: Connection) -> int:
            result = conn.execute(
                sa.delete(dashboard_sessions).where(
                    sa.or_(
                        dashboard_sessions.c.expires_at <= now,
                        dashboard_sessions.c.token_id.in_(revoked),
                        dashboard_sessions.c.token_id.not_in(known),
                    )
                )
            )
            return int(result.rowcount)

        return int(await self.store._write(op))

    async def count(self) -> int:
        def query(conn: Connection) -> int:
            stmt = sa.select(sa.func.count()).select_from(dashboard_sessions)
            return int(conn.execute(stmt).scalar_one())

        return await self.store._read(query)
