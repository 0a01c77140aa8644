"""Users and tokens in a real SQLite store: hashed at rest, revocable, expiring."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentdeck.core.roles import Role
from agentdeck.errors import NotFound, Refused, UsageError
from agentdeck.store.store import Store
from agentdeck.store.users import FILE_TOKEN_NAME, UserStore

pytestmark = pytest.mark.anyio


async def test_bootstrap_gives_the_token_file_token_to_a_first_admin(store: Store) -> None:
    users = UserStore(store)
    made = await users.bootstrap("the-token-file-token-0123456789")
    assert made is not None and made.name == "admin" and made.role is Role.ADMIN
    found = await users.authenticate("the-token-file-token-0123456789")
    assert found is not None and (found.user, found.role) == ("admin", Role.ADMIN)
    assert [t.name for t in await users.list_tokens()] == [FILE_TOKEN_NAME]
    # Only once: a deck with users is left alone.
    assert await users.bootstrap("another-token-0123456789abcdef") is None
    assert await users.authenticate("another-token-0123456789abcdef") is None


@pytest.mark.sqlite_only("reads the database's files, every byte of them")
async def test_tokens_are_stored_hashed_only(store: Store, db_path: Path) -> None:
    users = UserStore(store)
    await users.add_user("alice", Role.OPERATOR)
    info, secret = await users.create_token("alice", name="laptop")
    await store.close()
    raw = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert secret.encode() not in raw
    assert info.id.encode() in raw  # the row is there, its secret is not


async def test_revoked_and_expired_tokens_do_not_authenticate(store: Store) -> None:
    users = UserStore(store)
    await users.add_user("bob", Role.VIEWER)
    info, secret = await users.create_token("bob")
    assert (await users.authenticate(secret)) is not None
    with pytest.raises(NotFound):
        await users.revoke_token(info.id[:2])  # too short a prefix to name one
    await users.revoke_token(info.id[:6])
    assert await users.authenticate(secret) is None
    with pytest.raises(Refused):
        await users.revoke_token(info.id)
    with pytest.raises(UsageError):
        await users.create_token("bob", expires_at=time.time() - 1)
    assert await users.authenticate("not-a-token-at-all-0123456789") is None


async def test_users_bad_input_and_the_last_admin(store: Store) -> None:
    users = UserStore(store)
    await users.add_user("root", Role.ADMIN)
    with pytest.raises(UsageError):
        await users.add_user("Bad Name", Role.VIEWER)
    with pytest.raises(Refused):
        await users.add_user("root", Role.VIEWER)
    with pytest.raises(NotFound):
        await users.create_token("ghost")
    with pytest.raises(Refused, match="last admin"):
        await users.remove_user("root")
    await users.add_user("carol", Role.OPERATOR)
    _, secret = await users.create_token("carol")
    revoked = await users.remove_user("carol")
    assert len(revoked) == 1 and await users.authenticate(secret) is None
    assert [u.name for u in await users.list_users()] == ["root"]


async def test_a_token_file_token_nobody_has_is_the_admins_again(store: Store) -> None:
    """An older version gave admin a token nobody had (for an empty token file)."""
    users = UserStore(store)
    await users.bootstrap("")  # what it called: a random token, shown to nobody
    (lost,) = await users.list_tokens()
    restored = await users.restore_file_token("the-new-token-file-token-0123456789")
    assert restored is not None
    info, revoked = restored
    assert (info.user, info.name, revoked) == ("admin", FILE_TOKEN_NAME, [lost.id])
    found = await users.authenticate("the-new-token-file-token-0123456789")
    assert found is not None and (found.user, found.role) == ("admin", Role.ADMIN)
    assert await users.restore_file_token("the-new-token-file-token-0123456789") is None


async def test_a_revoked_token_file_token_stays_revoked(store: Store) -> None:
    users = UserStore(store)
    await users.bootstrap("the-token-file-token-0123456789")
    (token,) = await users.list_tokens()
    await users.revoke_token(token.id)
    assert await users.restore_file_token("the-token-file-token-0123456789") is None
    assert await users.authenticate("the-token-file-token-0123456789") is None


async def test_a_removed_users_token_in_the_file_is_not_given_back(store: Store) -> None:
    users = UserStore(store)
    await users.bootstrap("the-token-file-token-0123456789")
    await users.add_user("root", Role.ADMIN)
    await users.remove_user("admin")  # its tokens are revoked, its row gone
    assert await users.restore_file_token("the-token-file-token-0123456789") is None
    assert await users.authenticate("the-token-file-token-0123456789") is None
