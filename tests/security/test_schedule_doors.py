"""Schedules' doors on a real daemon, by raw HTTP: a name that is a path, carries
control characters or a header break is refused (400) and nothing is kept; a time
zone that is a path is refused; a body naming its owner or its next due time, or
carrying a NUL, is refused (422); a viewer cannot add or run one (403); another
user's schedule is theirs (they own its agents), and their scenario is held to a
built-in or a file in the project's ``.agentdeck/`` (422 for any other path)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agentdeck.core.roles import Role
from tests.conftest import make_settings
from tests.support.served import Served, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def daemon(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with serving(make_settings(tmp_path_factory.mktemp("doors"))) as s:
        yield s


@pytest.fixture
async def served(daemon: Served) -> AsyncIterator[Served]:
    """The module's daemon, with no schedule before or after the test."""
    yield daemon
    for s in await daemon.deck.schedules():
        await daemon.deck.remove_schedule(s.name)


def body(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "cron": "0 9 * * 1-5", "prompt": "p", "scenario": "chat",
            "project": "/tmp", **extra}  # fmt: skip


async def names(served: Served) -> list[str]:
    return [s.name for s in await served.deck.schedules()]


async def token_of(served: Served, user: str, role: Role) -> str:
    await served.deck.add_user(user, role)
    _, secret = await served.deck.create_token(user)
    return secret


def as_user(served: Served, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=served.info.url, headers={"Authorization": f"Bearer {secret}"}, timeout=60
    )


@pytest.mark.parametrize(
    "name",
    ["../etc", "a/b", "..", "x\x1b[2J", "a\r\nX-Injected: 1", "a\u202eb", "A", "a" * 64, " a"],
)
async def test_hostile_names_are_refused_and_nothing_is_kept(served: Served, name: str) -> None:
    async with served.api() as api:
        r = await api.post("/api/schedules", json=body(name))
    assert r.status_code == 400, r.text
    assert "schedule name" in r.json()["error"]["message"]
    assert await names(served) == []


@pytest.mark.parametrize("path", ["%2e%2e%2fetc", "..%2F..%2Fetc%2Fpasswd", "a%00b", "a%1bb"])
async def test_hostile_names_in_the_path_name_nothing(served: Served, path: str) -> None:
    async with served.api() as api:
        for method, suffix in [("GET", ""), ("DELETE", ""), ("POST", "/run"), ("POST", "/pause")]:
            r = await api.request(method, f"/api/schedules/{path}{suffix}")
            assert r.status_code in (400, 404), (method, path, r.status_code, r.text)


@pytest.mark.parametrize("tz", ["../../../etc/passwd", "/etc/localtime", "UTC/../../x"])
async def test_a_time_zone_that_is_a_path_is_refused(served: Served, tz: str) -> None:
    async with served.api() as api:
        r = await api.post("/api/schedules", json=body("tz", tz=tz))
    assert r.status_code == 400 and "time zone" in r.text
    assert await names(served) == []


@pytest.mark.parametrize(
    "extra",
    [{"created_by": "mallory"}, {"next_at": 0.0}, {"paused": False}, {"prompt": "a\x00b"},
     {"worktree": "yes"}, {"budget_usd": "5"}],
)  # fmt: skip
async def test_what_a_client_may_not_say_is_refused(served: Served, extra: dict[str, Any]) -> None:
    async with served.api() as api:
        r = await api.post("/api/schedules", json=body("s", **extra))
    assert r.status_code == 422, r.text
    assert await names(served) == []


async def test_a_viewer_cannot_add_or_run_one(served: Served) -> None:
    secret = await token_of(served, "vera", Role.VIEWER)
    async with served.api() as api:
        assert (await api.post("/api/schedules", json=body("mine"))).status_code == 201
    async with as_user(served, secret) as api:
        assert (await api.post("/api/schedules", json=body("hers"))).status_code == 403
        assert (await api.post("/api/schedules/mine/run")).status_code == 403
        assert (await api.delete("/api/schedules/mine")).status_code == 403
        assert (await api.get("/api/schedules/mine")).status_code == 200
    assert await names(served) == ["mine"]


async def test_another_users_schedule_is_theirs_and_their_scenario_confined(
    served: Served,
) -> None:
    secret = await token_of(served, "olivia", Role.OPERATOR)
    async with as_user(served, secret) as api:
        r = await api.post("/api/schedules", json=body("olivias"))
        assert r.status_code == 201, r.text
        assert r.json()["created_by"] == "olivia"
        for scenario in ["/etc/passwd", "../../etc/passwd"]:
            r = await api.post("/api/schedules", json=body("sneaky", scenario=scenario))
            assert r.status_code == 422, r.text
    assert await names(served) == ["olivias"]
