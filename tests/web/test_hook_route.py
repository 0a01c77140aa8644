"""``POST /api/hooks/event`` over real HTTP: the hook socket's protocol with a token.

The session it reports is the token's user's; another user cannot report on it;
no token is 401, a viewer 403, a body that is no hook event 400, one over the cap
413 — and none of those records anything.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentdeck.core.agent import AgentSource
from agentdeck.core.roles import Role
from agentdeck.web import api_hooks
from tests.hooks.payloads import sample
from tests.web.conftest import RunningDaemon

pytestmark = pytest.mark.anyio

ROUTE = "/api/hooks/event"


async def _token(daemon: RunningDaemon, name: str, role: Role) -> str:
    identity = daemon.deck.identity
    await identity.bootstrap(daemon.token)
    await identity.add_user(name, role)
    _, secret = await identity.create_token(name, name="hooks")
    return secret


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


async def _events(daemon: RunningDaemon) -> int:
    return (await daemon.deck._store.stats()).last_event_id


def _event(name: str, session: str, **changes: Any) -> dict[str, Any]:
    return {"v": 1, "event": sample(name, session_id=session, **changes), "env": {}}


async def test_the_session_is_the_token_users(daemon: RunningDaemon) -> None:
    alice = await _token(daemon, "alice", Role.OPERATOR)
    session = "a1b2c3d4-0000-4000-8000-00000000a11c"
    async with daemon.client(token=alice) as client:
        started = await client.post(ROUTE, json=_event("SessionStart", session))
        prompt = await client.post(ROUTE, json=_event("UserPromptSubmit", session))
    assert started.status_code == 200, started.text
    assert started.headers["content-type"].startswith("application/x-ndjson")
    [reply] = _lines(started.text)
    assert reply["exit"] == 0 and "fallback" not in reply
    assert _lines(prompt.text)[-1]["exit"] == 0
    agent = await daemon.deck._store.agent_for_session(session, AgentSource.EXTERNAL)
    assert agent is not None
    assert agent.spec.owner == "alice"


async def test_another_users_session_is_refused_and_nothing_recorded(
    daemon: RunningDaemon,
) -> None:
    alice = await _token(daemon, "alice", Role.OPERATOR)
    mallory = await _token(daemon, "mallory", Role.OPERATOR)
    session = "a1b2c3d4-0000-4000-8000-0000000000b0"
    async with daemon.client(token=alice) as client:
        assert (await client.post(ROUTE, json=_event("SessionStart", session))).status_code == 200
    before = await _events(daemon)
    async with daemon.client(token=mallory) as client:
        answer = await client.post(ROUTE, json=_event("UserPromptSubmit", session))
    assert answer.status_code == 200
    [reply] = _lines(answer.text)
    assert reply["fallback"] is True
    assert "another user" in reply["reason"]
    assert await _events(daemon) == before
    agent = await daemon.deck._store.agent_for_session(session, AgentSource.EXTERNAL)
    assert agent is not None and agent.spec.owner == "alice"


async def test_no_token_is_401_and_a_viewer_403(daemon: RunningDaemon) -> None:
    viewer = await _token(daemon, "vera", Role.VIEWER)
    before = await _events(daemon)
    body = _event("SessionStart", "a1b2c3d4-0000-4000-8000-0000000000c0")
    async with daemon.client(token="") as client:
        assert (await client.post(ROUTE, json=body)).status_code == 401
    async with daemon.client(token="adk_" + "x" * 40) as client:
        assert (await client.post(ROUTE, json=body)).status_code == 401
    async with daemon.client(token=viewer) as client:
        assert (await client.post(ROUTE, json=body)).status_code == 403
    assert await _events(daemon) == before


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{not json", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"v": 1, "env": {}}', '"event"'),
        (b'{"v": 2, "event": {}}', "version"),
        (b'{"event": {"hook_event_name": "Stop"}, "env": {"A": 1}}', '"env"'),
        (b'{"event": {"hook_event_name": "Stop"}, "owner": "admin"}', "unknown key 'owner'"),
        (b"\xff\xfe", "not JSON"),
    ],
)
async def test_a_body_that_is_no_hook_event_is_400(
    daemon: RunningDaemon, body: bytes, said: str
) -> None:
    before = await _events(daemon)
    async with daemon.client() as client:
        answer = await client.post(
            ROUTE, content=body, headers={"content-type": "application/json"}
        )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["status"] == 400
    assert said in error["message"]
    assert await _events(daemon) == before


async def test_a_body_over_the_cap_is_413_declared_or_streamed(
    daemon: RunningDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_hooks, "MAX_REQUEST", 4096)  # the socket's 64 MiB, made small
    body = json.dumps(_event("SessionStart", "s" * 5000)).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    before = await _events(daemon)
    async with daemon.client() as client:
        declared = await client.post(ROUTE, content=body)
        streamed = await client.post(ROUTE, content=chunks())
    for answer in (declared, streamed):
        assert answer.status_code == 413, answer.text
        assert "at most" in answer.json()["error"]["message"]
    assert await _events(daemon) == before


async def test_the_route_is_in_the_openapi_document_with_its_schema(
    daemon: RunningDaemon,
) -> None:
    operation = daemon.app.openapi()["paths"][ROUTE]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["event"]


def test_the_cap_is_the_sockets() -> None:
    from agentdeck.hooks.socket_server import MAX_REQUEST

    assert api_hooks.MAX_REQUEST == MAX_REQUEST
