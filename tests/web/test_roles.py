"""The role matrix: every route of the OpenAPI document (and every page) against
every role, over real HTTP. A route with no entry in ``web.access.ROUTE_ROLES``
is refused to everyone, so a new route cannot be forgotten: this test fails."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.routing import APIRoute

from agentdeck.core.roles import Role
from tests.web.conftest import RunningDaemon

pytestmark = pytest.mark.anyio

ROLE_MESSAGE = "role"


def _all_routes(routes: list[Any]) -> Iterator[APIRoute]:
    """Every route of the app, pages too (FastAPI includes routers lazily)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _all_routes(list(inner.routes))


def _operations(daemon: RunningDaemon) -> list[tuple[str, str]]:
    found = {
        (method.upper(), path)
        for path, ops in daemon.app.openapi()["paths"].items()
        for method in ops
    }
    for route in _all_routes(list(daemon.app.router.routes)):
        found |= {(m, route.path) for m in route.methods or () if m != "HEAD"}
    return sorted(found, key=lambda op: (op[1], op[0]))


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "zz00nothing", path)


async def _token_for(daemon: RunningDaemon, role: Role) -> str:
    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    if role is Role.ADMIN:
        return daemon.token
    name = f"{role}1"
    if name not in [u.name for u in await identity.users.list_users()]:
        await identity.add_user(name, role)
    _, secret = await identity.create_token(name, name="matrix")
    return secret


async def test_every_route_has_a_role_entry(daemon: RunningDaemon) -> None:
    from agentdeck.web.access import ROUTE_ROLES, needed_role

    ops = _operations(daemon)
    missing = [op for op in ops if needed_role(*op) is None]
    assert missing == [], f"routes without a role in web.access.ROUTE_ROLES: {missing}"
    stale = sorted(set(ROUTE_ROLES) - set(ops))
    assert stale == [], f"ROUTE_ROLES names routes that do not exist: {stale}"


@pytest.mark.parametrize("role", list(Role))
async def test_role_matrix(daemon: RunningDaemon, role: Role) -> None:
    from agentdeck.web.access import needed_role

    token = await _token_for(daemon, role)
    checked = 0
    async with daemon.client(token=token) as client:
        for method, path in _operations(daemon):
            if path.endswith("/stream"):
                continue  # endless: the stream tests below
            needed = needed_role(method, path)
            assert needed is not None
            kwargs: dict[str, Any] = {} if method in ("GET", "DELETE") else {"json": {}}
            r = await client.request(method, _concrete(path), **kwargs)
            refused = r.status_code == 403 and ROLE_MESSAGE in r.text
            if role.allows(needed):
                assert not refused, (role, method, path, r.text)
            else:
                assert refused, (role, method, path, r.status_code, r.text)
                if path.startswith("/api"):
                    error = r.json()["error"]
                    assert error["status"] == 403 and f"needs the {needed} role" in error["message"]
            checked += 1
    assert checked > 60


@pytest.mark.parametrize("role", list(Role))
async def test_every_role_may_read_the_event_stream(daemon: RunningDaemon, role: Role) -> None:
    from tests.web.sseclient import stream_request

    token = await _token_for(daemon, role)
    async with daemon.client(token=token) as client, stream_request(client) as response:
        assert response.status_code == 200


async def test_every_api_route_declares_403(daemon: RunningDaemon) -> None:
    for path, ops in daemon.app.openapi()["paths"].items():
        if not path.startswith("/api"):
            continue
        for method, op in ops.items():
            assert "403" in op["responses"], (method, path)


async def test_a_route_without_an_entry_is_refused_to_everyone(daemon: RunningDaemon) -> None:
    @daemon.app.get("/api/forgotten")
    async def forgotten() -> dict[str, bool]:
        return {"reached": True}

    async with daemon.client() as admin:
        r = await admin.get("/api/forgotten")
    assert r.status_code == 403 and "no role entry" in r.json()["error"]["message"]
