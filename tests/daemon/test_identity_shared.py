"""Several API nodes on one database: a token revoked or a user removed on one node
holds on every other within ``recheck_seconds`` — for tokens and for dashboard
sessions — though each node remembers what it proved (a role changed is taken on
the same way; roles change only by removing and adding a user today)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentdeck.core.roles import Role
from agentdeck.daemon.identity import Identity
from agentdeck.store import Store
from agentdeck.store.users import UserStore
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

SECRET = "adk_shared_identity_test_0123456789abcdef"


@pytest.fixture
async def nodes(pg_url: str) -> AsyncIterator[tuple[Identity, Identity]]:
    async with Store.open(pg_url) as one, Store.open(pg_url) as two:
        yield (
            Identity(UserStore(one), session_ttl=3600, recheck_seconds=0.2),
            Identity(UserStore(two), session_ttl=3600, recheck_seconds=0.2),
        )


async def test_a_token_revoked_on_one_node_ends_on_the_other(
    nodes: tuple[Identity, Identity],
) -> None:
    first, second = nodes
    await first.users.add_user("ada", Role.OPERATOR)
    info, _ = await first.users.create_token("ada", name="laptop", secret=SECRET)
    assert (await second.by_token(SECRET)) is not None  # proven there, remembered
    logged_in = await second.login(SECRET)
    assert logged_in is not None
    session = logged_in[0]
    assert await second.by_session(session) is not None
    await first.revoke_token(info.id)

    async def refused() -> bool:
        return await second.by_token(SECRET) is None

    await eventually(refused, timeout=10, what="the revocation on the other node")
    assert await second.by_session(session) is None
    assert await Identity(second.users, session_ttl=3600).by_session(session) is None


async def test_a_user_removed_on_one_node_is_gone_on_the_other(
    nodes: tuple[Identity, Identity],
) -> None:
    first, second = nodes
    await first.users.add_user("admin", Role.ADMIN)
    await first.users.add_user("bob", Role.ADMIN)
    await first.users.create_token("bob", name="desk", secret=SECRET)
    proven = await second.by_token(SECRET)
    assert proven is not None and proven.role is Role.ADMIN
    await first.users.remove_user("bob")

    async def gone() -> bool:
        return await second.by_token(SECRET) is None

    await eventually(gone, timeout=10, what="the removal on the other node")


async def test_one_node_alone_asks_nothing_again(pg_url: str) -> None:
    async with Store.open(pg_url) as store:
        alone = Identity(UserStore(store), session_ttl=3600)
        await alone.users.add_user("cy", Role.VIEWER)
        await alone.users.create_token("cy", name="t", secret=SECRET)
        assert await alone.by_token(SECRET) is not None
        assert alone.recheck_seconds is None


async def test_a_login_on_one_node_is_known_on_the_other_and_a_logout_there_ends_it(
    nodes: tuple[Identity, Identity],
) -> None:
    first, second = nodes
    await first.users.add_user("ada", Role.OPERATOR)
    await first.users.create_token("ada", name="laptop", secret=SECRET)
    logged_in = await first.login(SECRET)
    assert logged_in is not None
    session = logged_in[0]
    found = await second.by_session(session)  # never seen there: read from the database
    assert found is not None and (found.user, found.role) == ("ada", Role.OPERATOR)
    assert await first.by_session(session) is not None  # remembered here
    await second.logout(session)
    assert await second.by_session(session) is None
    assert await Identity(second.users, session_ttl=3600).by_session(session) is None

    async def ended() -> bool:
        return await first.by_session(session) is None

    await eventually(ended, timeout=10, what="the logout on the other node")
