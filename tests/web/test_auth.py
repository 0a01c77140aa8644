"""Who may talk to the daemon, checked over real HTTP: token, cookie, Host, Origin.

Every refused request must leave the deck as it was.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import spawned_events
from agentdeck.web.auth import COOKIE
from tests.web.conftest import RunningDaemon
from tests.web.sseclient import stream_request

pytestmark = pytest.mark.anyio

CREATE = {"prompt": "hello", "scenario": "chat"}


async def seeded(daemon: RunningDaemon) -> Agent:
    now = time.time()
    agent = Agent(
        id="agauth0001",
        name="seeded",
        state=AgentState.DONE,
        spec=AgentSpec(prompt="p"),
        cwd="/tmp",
        created_at=now,
        updated_at=now,
    )
    await daemon.deck._store.record(spawned_events(agent), agent)
    return agent


async def unchanged(daemon: RunningDaemon, last_event: int) -> None:
    assert await daemon.deck._store.last_event_id() == last_event
    assert [a.id for a in await daemon.deck._store.list_agents(include_archived=True)] == [
        "agauth0001"
    ]
    assert daemon.deck._runner.sessions == {}


@pytest.mark.parametrize("token", ["", "wrong-token"])
async def test_no_or_wrong_token_is_401(daemon: RunningDaemon, token: str) -> None:
    agent = await seeded(daemon)
    last = await daemon.deck._store.last_event_id()
    async with daemon.client(token=token) as client:
        for method, path, body in [
            ("GET", "/api/agents", None),
            ("GET", f"/api/agents/{agent.id}", None),
            ("GET", "/api/events", None),
            ("GET", "/api/events/stream", None),
            ("GET", "/api/stats", None),
            ("GET", "/openapi.json", None),
            ("POST", "/api/agents", CREATE),
            ("POST", f"/api/agents/{agent.id}/archive", {"archived": True}),
            ("POST", f"/api/agents/{agent.id}/resume", {}),
        ]:
            r = await client.request(method, path, json=body)
            assert r.status_code == 401, (method, path, r.text)
            assert "token" in r.text
    await unchanged(daemon, last)
    assert [a.id for a in await daemon.deck.list_agents()] == [agent.id]  # not archived


async def test_foreign_host_is_421(daemon: RunningDaemon) -> None:
    await seeded(daemon)
    last = await daemon.deck._store.last_event_id()
    async with daemon.client() as client:
        for method, path, body in [
            ("GET", "/api/agents", None),
            ("POST", "/api/agents", CREATE),
            ("GET", "/api/events/stream", None),
        ]:
            r = await client.request(
                method, path, json=body, headers={"Host": f"evil.example:{daemon.port}"}
            )
            assert r.status_code == 421, (path, r.text)
    await unchanged(daemon, last)


async def test_foreign_origin_is_403_on_changes_and_streams(daemon: RunningDaemon) -> None:
    agent = await seeded(daemon)
    last = await daemon.deck._store.last_event_id()
    async with daemon.client() as client:
        for origin in ("http://evil.example", f"http://localhost:{daemon.port + 1}"):
            foreign = {"Origin": origin}
            r = await client.post("/api/agents", json=CREATE, headers=foreign)
            assert r.status_code == 403, r.text
            r = await client.post(
                f"/api/agents/{agent.id}/archive", json={"archived": True}, headers=foreign
            )
            assert r.status_code == 403
            async with stream_request(client, origin=origin) as response:
                assert response.status_code == 403
        await unchanged(daemon, last)

        # The same origin is fine.
        same = {"Origin": f"http://{daemon.host}"}
        r = await client.post(
            f"/api/agents/{agent.id}/archive", json={"archived": True}, headers=same
        )
        assert r.status_code == 200, r.text
        async with stream_request(client, origin=f"http://{daemon.host}") as response:
            assert response.status_code == 200


async def test_login_url_sets_a_cookie_that_then_works(daemon: RunningDaemon) -> None:
    async with daemon.client(token="") as browser:
        wrong = await browser.get("/login", params={"token": "nope"})
        assert wrong.status_code == 401 and COOKIE not in browser.cookies
        assert (await browser.get("/api/agents")).status_code == 401

        r = await browser.get("/login", params={"token": daemon.token})
        assert r.status_code == 303
        assert browser.cookies[COOKIE] and browser.cookies[COOKIE] != daemon.token
        assert daemon.token not in r.headers["set-cookie"]
        assert "httponly" in r.headers["set-cookie"].lower()

        r = await browser.get("/api/agents")
        assert r.status_code == 200, r.text
        async with stream_request(browser) as response:
            assert response.status_code == 200


async def test_no_secret_in_logs_or_events(
    daemon: RunningDaemon, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    # A uvicorn started with access_log=False or a log level (the scripted
    # model's) changes this logger process-wide; here the access log must be seen.
    caplog.set_level(logging.DEBUG, logger="uvicorn.access")
    monkeypatch.setattr(logging.getLogger("uvicorn.access"), "propagate", True)
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", True)  # its parent too
    async with daemon.client(token="") as browser:
        await browser.get("/login", params={"token": daemon.token})
        secret = browser.cookies[COOKIE]
        await browser.get("/login", params={"token": daemon.token[:-1]})
        await browser.get("/api/agents")
        await browser.get("/api/stats")
        await browser.post("/api/agents", json={"prompt": "x", "cwd": "/nonexistent/dir"})
    async with daemon.client() as api:
        await api.get("/api/agents", params={"q": "x"})
        await api.get("/api/events")
    # The daemon's records (the test's own HTTP client logs the URLs it requests).
    server = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(f"{r.getMessage()} {r.args}" for r in server)
    assert 'GET /login HTTP/1.1" 303' in logged  # the access log is captured
    assert daemon.token not in logged
    assert daemon.token[:-1] not in logged
    assert secret not in logged
    events = json.dumps([e.to_dict() for e in await daemon.deck.events(limit=5000)])
    assert daemon.token not in events and secret not in events
