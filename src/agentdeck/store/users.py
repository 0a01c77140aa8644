"""Users and their API tokens in the store (the tables of migration 0007).

Writes go through the store's one write path; checks that must hold at the time
of the write (the last admin is never removed, a token's user exists) run inside
it. Tokens are kept hashed only (``core.token_hash``): ``create_token`` returns
the secret once and nothing can read it back.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from typing import Any

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core import token_hash
from agentdeck.core.agent import MIN_PREFIX
from agentdeck.core.roles import Principal, Role, TokenInfo, User, check_user_name
from agentdeck.errors import NotFound, Refused, UsageError
from agentdeck.store.schema import tokens, users
from agentdeck.store.store import Store

FILE_TOKEN_NAME = "token file"  # the name of the bootstrap admin's token


def _user(row: Any) -> User:
    return User(name=row.name, role=Role(row.role), created_at=row.created_at)


def _token(row: Any) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        user=row.user_name,
        name=row.name,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )


def _admins(conn: Connection) -> int:
    stmt = sa.select(sa.func.count()).select_from(users).where(users.c.role == str(Role.ADMIN))
    return int(conn.execute(stmt).scalar_one())


class UserStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- users ---------------------------------------------------------------------

    async def add_user(self, name: str, role: Role) -> User:
        user = User(name=check_user_name(name), role=role, created_at=time.time())

        def op(conn: Connection) -> None:
            if conn.execute(sa.select(users.c.name).where(users.c.name == name)).first():
                raise Refused(f"user {name!r} exists", hint="`agentdeck users list` shows them")
            conn.execute(sa.insert(users).values(user.to_dict()))

        await self.store._write(op)
        return user

    async def list_users(self) -> list[User]:
        def query(conn: Connection) -> list[User]:
            return [_user(r) for r in conn.execute(sa.select(users).order_by(users.c.name))]

        return await self.store._read(query)

    async def count_users(self) -> int:
        def query(conn: Connection) -> int:
            return int(conn.execute(sa.select(sa.func.count()).select_from(users)).scalar_one())

        return await self.store._read(query)

    async def remove_user(self, name: str) -> list[str]:
        """Remove the user and revoke their tokens (ids returned). The last admin
        cannot be removed: nobody could manage the deck any more."""
        now = time.time()

        def op(conn: Connection) -> list[str]:
            row = conn.execute(sa.select(users).where(users.c.name == name)).first()
            if row is None:
                raise NotFound("user", name, hint="`agentdeck users list` shows them")
            if row.role == str(Role.ADMIN) and _admins(conn) <= 1:
                raise Refused(
                    f"{name!r} is the last admin", hint="add another admin before removing this one"
                )
            live = sa.and_(tokens.c.user_name == name, tokens.c.revoked_at.is_(None))
            ids = [r.id for r in conn.execute(sa.select(tokens.c.id).where(live))]
            conn.execute(sa.update(tokens).where(live).values(revoked_at=now))
            conn.execute(sa.delete(users).where(users.c.name == name))
            return ids

        revoked: list[str] = await self.store._write(op)
        return revoked

    # -- tokens --------------------------------------------------------------------

    async def create_token(
        self,
        user: str,
        *,
        name: str = "",
        expires_at: float | None = None,
        secret: str | None = None,
    ) -> tuple[TokenInfo, str]:
        """A new token for ``user``: its record and its secret, shown this once."""
        secret = secret or token_hash.new_secret()
        if len(secret) < token_hash.MIN_CHARS:
            raise UsageError(f"a token must be at least {token_hash.MIN_CHARS} characters long")
        now = time.time()
        if expires_at is not None and expires_at <= now:
            raise UsageError("the token would expire before it is created")
        info = TokenInfo(
            id="t" + secrets.token_hex(5),
            user=user,
            name=name.strip() or "token",
            created_at=now,
            expires_at=expires_at,
        )
        salt = token_hash.new_salt()
        digest = await anyio.to_thread.run_sync(token_hash.digest, secret, salt)
        row = {
            "id": info.id,
            "user_name": user,
            "name": info.name,
            "lookup": token_hash.lookup_key(secret),
            "salt": salt,
            "digest": digest,
            "created_at": now,
            "expires_at": expires_at,
            "revoked_at": None,
        }

        def op(conn: Connection) -> None:
            if conn.execute(sa.select(users.c.name).where(users.c.name == user)).first() is None:
                raise NotFound("user", user, hint="`agentdeck users add NAME --role R` first")
            conn.execute(sa.insert(tokens).values(row))

        await self.store._write(op)
        return info, secret

    async def list_tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        def query(conn: Connection) -> list[TokenInfo]:
            stmt = sa.select(tokens).order_by(tokens.c.created_at, tokens.c.id)
            if user is not None:
                stmt = stmt.where(tokens.c.user_name == user)
            return [_token(r) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def revoke_token(self, token_id: str) -> TokenInfo:
        """Revoke by id (or a unique prefix); revoking twice is refused."""
        now = time.time()

        def op(conn: Connection) -> TokenInfo:
            # A unique prefix of at least MIN_PREFIX characters, as for other ids.
            where: sa.ColumnElement[bool]
            if len(token_id) >= MIN_PREFIX:
                pattern = token_id.replace("%", r"\%").replace("_", r"\_") + "%"
                where = tokens.c.id.like(pattern, escape="\\")
            else:
                where = tokens.c.id == token_id
            rows = conn.execute(sa.select(tokens).where(where).limit(3)).all()
            exact = [r for r in rows if r.id == token_id]
            if not exact and len(rows) != 1:
                raise NotFound("token", token_id, hint="`agentdeck tokens list` shows them")
            row = (exact or rows)[0]
            if row.revoked_at is not None:
                raise Refused(f"token {row.id} is already revoked")
            conn.execute(sa.update(tokens).where(tokens.c.id == row.id).values(revoked_at=now))
            return replace(_token(row), revoked_at=now)

        revoked: TokenInfo = await self.store._write(op)
        return revoked

    async def authenticate(self, secret: str) -> Principal | None:
        """The user behind a token, if it is known, unrevoked and unexpired."""
        now = time.time()
        for row in await self._rows_of(secret):
            if row.role is not None and _token(row).usable(now):
                return Principal(
                    user=row.user_name, role=Role(row.role), token_id=row.id,
                    expires_at=row.expires_at,
                )  # fmt: skip
        return None

    async def principal_of(self, token_id: str) -> Principal | None:
        """The user behind token ``token_id`` now (its role may have changed), if the
        token is unrevoked and unexpired and its user still there: what a node that
        proved the token once asks again, cheaply (no key derivation)."""

        def query(conn: Connection) -> Any:
            stmt = (
                sa.select(tokens, users.c.role)
                .join(users, users.c.name == tokens.c.user_name, isouter=True)
                .where(tokens.c.id == token_id)
            )
            return conn.execute(stmt).first()

        row = await self.store._read(query)
        if row is None or row.role is None or not _token(row).usable(time.time()):
            return None
        return Principal(
            user=row.user_name, role=Role(row.role), token_id=row.id, expires_at=row.expires_at
        )

    async def _rows_of(self, secret: str) -> list[Any]:
        """The token rows that ``secret`` proves, usable or not, with their user's
        role (None: the user was removed)."""
        key = token_hash.lookup_key(secret)

        def query(conn: Connection) -> list[Any]:
            stmt = (
                sa.select(tokens, users.c.role)
                .join(users, users.c.name == tokens.c.user_name, isouter=True)
                .where(tokens.c.lookup == key)
            )
            return list(conn.execute(stmt))

        proven = []
        for row in await self.store._read(query):
            if await anyio.to_thread.run_sync(token_hash.verify, secret, row.salt, row.digest):
                proven.append(row)
        return proven

    async def bootstrap(self, secret: str) -> User | None:
        """On a deck without users: user ``admin`` owning ``secret`` (the token
        file's), so an upgraded deck's clients keep working unchanged."""
        if await self.count_users():
            return None
        user = await self.add_user("admin", Role.ADMIN)
        await self.create_token(user.name, name=FILE_TOKEN_NAME, secret=secret)
        return user

    async def restore_file_token(self, secret: str) -> tuple[TokenInfo, list[str]] | None:
        """On a deck with users whose token file's token (``secret``) is nobody's:
        it is made a token of the bootstrap admin again (``admin``, else the first
        admin), whose earlier token-file tokens are revoked; the new token and the
        ids revoked. None when the token is someone's already.

        An older version gave ``admin`` a token nobody had (it read an empty token
        file as "", and a token is never empty); a token file written anew since
        was then nobody's, and the deck could be logged into by nobody. The token
        file is the machine owner's key, as the database it guards is theirs. A
        token the deck knows is left as it is, revoked or expired too: a revocation
        holds (a new token file, made by removing the file, is the way back)."""
        if await self._rows_of(secret):
            return None
        admins = [u.name for u in await self.list_users() if u.role is Role.ADMIN]
        if not admins:
            return None
        owner = "admin" if "admin" in admins else admins[0]
        stale = [
            t.id
            for t in await self.list_tokens(user=owner)
            if t.name == FILE_TOKEN_NAME and t.revoked_at is None
        ]
        info, _ = await self.create_token(owner, name=FILE_TOKEN_NAME, secret=secret)
        for token_id in stale:
            await self.revoke_token(token_id)
        return info, stale
