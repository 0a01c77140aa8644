"""Dashboard sessions in the store, on both backends: a login is a row keyed by a
SHA-256 of its id (the id itself is nowhere in the database), found again by a
fresh Identity (another node, or the daemon restarted), ended by a logout, a
revoked token or a removed user, and swept once it can no longer log in."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentdeck.core.roles import Principal, Role
from agentdeck.daemon.identity import Identity
from agentdeck.store.sessions import SessionStore, key_of
from agentdeck.store.store import Store
from agentdeck.store.users import UserStore
from tests.store.conftest import db_rows

pytestmark = pytest.mark.anyio

SECRET = "adk_sessions_store_test_0123456789abcdef"


async def ada(store: Store) -> str:
    users = UserStore(store)
    await users.add_user("ada", Role.OPERATOR)
    info, _ = await users.create_token("ada", name="laptop", secret=SECRET)
    return info.id


async def test_a_login_is_kept_hashed_and_known_to_a_fresh_identity(store: Store) -> None:
    await ada(store)
    first = Identity(UserStore(store), session_ttl=3600)
    started = await first.login(SECRET)
    assert started is not None
    session_id, principal = started
    rows = db_rows(store, "SELECT key, user_name, created_at, expires_at FROM dashboard_sessions")
    assert len(rows) == 1
    key, user, created, expires = rows[0]
    assert key == key_of(session_id) and key != session_id and user == "ada"
    assert expires == pytest.approx(created + 3600) and principal.expires_at == expires
    every = repr(db_rows(store, "SELECT * FROM dashboard_sessions"))
    assert session_id not in every and SECRET not in every
    # Another node, or this daemon after a restart: nothing in memory, same session.
    second = Identity(UserStore(store), session_ttl=3600)
    found = await second.by_session(session_id)
    assert found is not None and (found.user, found.role) == ("ada", Role.OPERATOR)
    assert found.expires_at == pytest.approx(expires)


async def test_a_logout_ends_the_session_everywhere(store: Store) -> None:
    await ada(store)
    first = Identity(UserStore(store), session_ttl=3600)
    second = Identity(UserStore(store), session_ttl=3600, recheck_seconds=0)
    started = await first.login(SECRET)
    assert started is not None
    assert await second.by_session(started[0]) is not None
    await first.logout(started[0])
    assert db_rows(store, "SELECT count(*) FROM dashboard_sessions") == [(0,)]
    assert await first.by_session(started[0]) is None
    assert await second.by_session(started[0]) is None  # asked again: gone


async def test_unknown_forged_and_empty_ids_are_nobody(store: Store) -> None:
    await ada(store)
    identity = Identity(UserStore(store), session_ttl=3600)
    started = await identity.login(SECRET)
    assert started is not None
    for forged in ("", "x", started[0] + "x", key_of(started[0]), "' OR 1=1 --", "é" * 300):
        assert await identity.by_session(forged) is None
    await identity.logout("never-a-session")  # nothing to end: no error
    assert await identity.by_session(started[0]) is not None


async def test_a_revoked_token_or_removed_user_ends_its_sessions(store: Store) -> None:
    token_id = await ada(store)
    users = UserStore(store)
    identity = Identity(users, session_ttl=3600)
    one, two = await identity.login(SECRET), await identity.login(SECRET)
    assert one is not None and two is not None
    await identity.revoke_token(token_id)
    assert db_rows(store, "SELECT count(*) FROM dashboard_sessions") == [(0,)]
    assert await identity.by_session(one[0]) is None
    assert await Identity(users, session_ttl=3600).by_session(two[0]) is None

    await users.add_user("admin", Role.ADMIN)
    await users.add_user("bob", Role.VIEWER)
    await users.create_token("bob", name="desk", secret=SECRET + "b")
    bob = await identity.login(SECRET + "b")
    assert bob is not None
    await identity.remove_user("bob")
    assert await Identity(users, session_ttl=3600).by_session(bob[0]) is None
    assert db_rows(store, "SELECT count(*) FROM dashboard_sessions") == [(0,)]


async def test_a_token_revoked_by_someone_else_ends_the_session_when_asked(
    store: Store,
) -> None:
    """Revoked past this Identity (another node): the row stays until swept, but
    what it resolves to is read with its token, so it logs nobody in."""
    token_id = await ada(store)
    users = UserStore(store)
    started = await Identity(users, session_ttl=3600).login(SECRET)
    assert started is not None
    await users.revoke_token(token_id)  # not through that Identity
    assert await Identity(users, session_ttl=3600).by_session(started[0]) is None
    assert await SessionStore(store).sweep() == 1
    assert await SessionStore(store).count() == 0


async def test_an_expired_session_is_nobody_and_swept(store: Store) -> None:
    token_id = await ada(store)
    sessions = SessionStore(store)
    now = time.time()
    old = Principal(user="ada", role=Role.OPERATOR, token_id=token_id, expires_at=now - 1)
    live = Principal(user="ada", role=Role.OPERATOR, token_id=token_id, expires_at=now + 60)
    await sessions.add(key_of("old-session"), old, created_at=now - 100)
    await sessions.add(key_of("live-session"), live, created_at=now)
    identity = Identity(UserStore(store), session_ttl=3600)
    assert await identity.by_session("old-session") is None
    assert await identity.by_session("live-session") is not None
    assert await sessions.sweep() == 1
    assert [r[0] for r in db_rows(store, "SELECT key FROM dashboard_sessions")] == [
        key_of("live-session")
    ]


async def test_a_session_ends_with_its_token(store: Store) -> None:
    """A token that expires before the session's time is up ends the session."""
    users = UserStore(store)
    await users.add_user("ada", Role.OPERATOR)
    await users.create_token("ada", name="brief", secret=SECRET, expires_at=time.time() + 30)
    started = await Identity(users, session_ttl=3600).login(SECRET)
    assert started is not None
    assert started[1].expires_at is not None and started[1].expires_at <= time.time() + 30
    [(expires,)] = db_rows(store, "SELECT expires_at FROM dashboard_sessions")
    assert expires == pytest.approx(started[1].expires_at)


async def test_a_login_sweeps_what_ended(store: Store) -> None:
    token_id = await ada(store)
    sessions = SessionStore(store)
    gone = Principal(user="ada", role=Role.OPERATOR, token_id=token_id, expires_at=1.0)
    await sessions.add(key_of("ancient"), gone, created_at=0.0)
    identity = Identity(UserStore(store), session_ttl=3600)
    assert await identity.login(SECRET) is not None
    assert await sessions.count() == 1  # the new one only


@pytest.mark.sqlite_only("reads the database's files, every byte of them")
async def test_no_session_id_in_the_database_files(store: Store, db_path: Path) -> None:
    await ada(store)
    identity = Identity(UserStore(store), session_ttl=3600)
    ids = []
    for _ in range(3):
        started = await identity.login(SECRET)
        assert started is not None
        ids.append(started[0])
    await store.close()
    raw = b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*"))
    assert key_of(ids[0]).encode() in raw  # the rows are there
    for session_id in ids:
        assert session_id.encode() not in raw
