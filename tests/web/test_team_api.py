"""Users and tokens through the API: admin only, secrets shown once, and a revoked
or expired token stops working at once, open event streams included."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
import pytest

from agentdeck.core.roles import Role
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon
from tests.web.sseclient import messages, stream_request

pytestmark = pytest.mark.anyio


async def test_upgraded_deck_token_is_the_first_admins(api: httpx.AsyncClient) -> None:
    me = (await api.get("/api/whoami")).json()
    assert (me["user"], me["role"]) == ("admin", "admin")
    users = (await api.get("/api/users")).json()["users"]
    assert [(u["name"], u["role"]) for u in users] == [("admin", "admin")]


async def test_users_and_tokens_round_trip(
    daemon: RunningDaemon, api: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    r = await api.post("/api/users", json={"name": "alice", "role": "operator"})
    assert r.status_code == 201, r.text
    r = await api.post("/api/users", json={"name": "alice", "role": "viewer"})
    assert r.status_code == 409 and "exists" in r.json()["error"]["message"]
    r = await api.post("/api/users", json={"name": "eve", "role": "root"})
    assert r.status_code == 422
    r = await api.post("/api/tokens", json={"user": "alice", "name": "ci", "expires": "30d"})
    assert r.status_code == 201, r.text
    made = r.json()
    secret = made["token"]
    assert made["expires_at"] > time.time() + 29 * 86400
    r = await api.post("/api/tokens", json={"user": "alice", "expires": "soon"})
    assert r.status_code == 400 and "duration" in r.json()["error"]["message"]
    listed = (await api.get("/api/tokens")).json()["tokens"]
    assert secret not in json.dumps(listed)
    assert {t["id"] for t in listed} >= {made["id"]}
    async with daemon.client(token=secret) as alice:
        me = (await alice.get("/api/whoami")).json()
        assert (me["user"], me["role"]) == ("alice", str(Role.OPERATOR))
        assert (await alice.get("/api/users")).status_code == 403
        assert (await api.delete(f"/api/tokens/{made['id']}")).status_code == 200
        assert (await alice.get("/api/agents")).status_code == 401  # at once
    assert (await api.delete(f"/api/tokens/{made['id']}")).status_code == 409
    r = await api.delete("/api/users/admin")
    assert r.status_code == 409 and "last admin" in r.json()["error"]["message"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert secret not in logged


async def _stream_ends(client: httpx.AsyncClient, opened: asyncio.Event) -> bool:
    async with stream_request(client) as response:
        assert response.status_code == 200
        opened.set()
        async for _ in messages(response):
            pass
    return True


@pytest.mark.parametrize("how", ["revoked", "user removed", "expired"])
async def test_an_open_stream_ends_when_its_token_does(daemon: RunningDaemon, how: str) -> None:
    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    await identity.add_user("bob", Role.VIEWER)
    expires = time.time() + 2.0 if how == "expired" else None
    info, secret = await identity.create_token("bob", expires_at=expires)
    opened = asyncio.Event()
    async with daemon.client(token=secret) as bob, daemon.client() as admin:
        reader = asyncio.create_task(_stream_ends(bob, opened))
        await eventually(lambda: _true(opened.is_set()), what="the stream to open")
        assert not reader.done()
        if how == "revoked":
            assert (await admin.delete(f"/api/tokens/{info.id}")).status_code == 200
        elif how == "user removed":
            assert (await admin.delete("/api/users/bob")).status_code == 200
        assert await asyncio.wait_for(reader, timeout=30)
        assert (await bob.get("/api/agents")).status_code == 401


async def _true(value: bool) -> bool:
    return value
