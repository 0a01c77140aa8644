"""Door: the dashboard's session cookie, now that sessions are kept in the database.

Over real HTTP against a real daemon: a forged cookie (random, the stored key
itself, a logged-out one), an expired session and a session of a revoked token or
a removed user all get the login page (401), never the dashboard or the API; the
database holds no cookie that logs in."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from agentdeck.core.roles import Principal, Role
from agentdeck.settings import Settings
from agentdeck.store.sessions import SessionStore, key_of
from agentdeck.web.auth import COOKIE
from tests.web.conftest import RunningDaemon, running_daemon

pytestmark = pytest.mark.anyio


@pytest.fixture
async def daemon(settings: Settings) -> AsyncIterator[RunningDaemon]:
    """A real daemon app (Deck + uvicorn) on a fresh home, as the web tests'."""
    async with running_daemon(settings) as running:
        yield running


async def logged_in(daemon: RunningDaemon, token: str) -> str:
    async with daemon.client(token="") as browser:
        r = await browser.get("/login", params={"token": token})
        assert r.status_code == 303, r.text
        return str(browser.cookies[COOKIE])


async def refused(daemon: RunningDaemon, cookie: str) -> None:
    async with daemon.client(token="", cookies={COOKIE: cookie}) as browser:
        page = await browser.get("/")
        assert page.status_code == 401 and "log in" in page.text.lower()
        assert (await browser.get("/api/agents")).status_code == 401


async def allowed(daemon: RunningDaemon, cookie: str) -> None:
    async with daemon.client(token="", cookies={COOKIE: cookie}) as browser:
        assert (await browser.get("/api/agents")).status_code == 200


async def test_a_forged_or_logged_out_cookie_is_the_login_page(daemon: RunningDaemon) -> None:
    cookie = await logged_in(daemon, daemon.token)
    await allowed(daemon, cookie)
    stored = await daemon.deck.identity.sessions.count()
    for forged in ("forged", key_of(cookie), cookie[:-1], cookie + "A", daemon.token):
        await refused(daemon, forged)
    async with daemon.client(token="", cookies={COOKIE: cookie}) as browser:
        r = await browser.post("/logout", headers={"origin": f"http://{daemon.host}"})
        assert r.status_code == 303
    await refused(daemon, cookie)
    assert await daemon.deck.identity.sessions.count() == stored - 1


async def test_an_expired_session_is_the_login_page(daemon: RunningDaemon) -> None:
    identity = daemon.deck.identity
    await allowed(daemon, await logged_in(daemon, daemon.token))  # (the deck's admin made)
    admin = await identity.by_token(daemon.token)
    assert admin is not None
    then = time.time() - 10
    await SessionStore(daemon.deck._store).add(
        key_of("a-session-that-ended-0123456789"),
        Principal(user=admin.user, role=Role.ADMIN, token_id=admin.token_id, expires_at=then),
        created_at=then - 3600,
    )
    await refused(daemon, "a-session-that-ended-0123456789")


async def test_a_session_of_a_revoked_token_or_removed_user_is_the_login_page(
    daemon: RunningDaemon,
) -> None:
    identity = daemon.deck.identity
    await identity.add_user("eve", Role.OPERATOR)
    info, secret = await identity.create_token("eve", name="laptop")
    cookie = await logged_in(daemon, secret)
    await allowed(daemon, cookie)
    await identity.revoke_token(info.id)
    await refused(daemon, cookie)

    _, again = await identity.create_token("eve", name="desk")
    cookie = await logged_in(daemon, again)
    await allowed(daemon, cookie)
    await identity.remove_user("eve")
    await refused(daemon, cookie)
