"""The agent page shows an agent's structured result (core.output_schema), escaped."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.output_schema import BUILTIN

from .conftest import RunningDaemon
from .dashboard_support import logged_in
from .test_dashboard import make_agent, seed

pytestmark = pytest.mark.anyio


async def test_the_agent_page_shows_the_structured_result_escaped(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    hostile = {"status": "COMPLETE", "summary": "<script>alert(1)</script> & done"}
    agent = make_agent("st1", AgentState.DONE, extra={"structured_result": hostile})
    agent = replace(agent, spec=replace(agent.spec, output_schema=BUILTIN["status"]))
    await seed(store, agent)
    await seed(store, make_agent("st2", AgentState.DONE))
    async with logged_in(daemon) as web:
        page = (await web.get("/agents/st1")).text
        plain = (await web.get("/agents/st2")).text
    assert 'id="structured-result"' in page and "COMPLETE" in page
    assert "<script>alert(1)</script>" not in page
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e \\u0026 done" in page
    assert 'id="structured-result"' not in plain


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "object", "$ref": "https://evil.example/s.json"}, "only point inside it"),
        ({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}, "inside it"),
        ({"type": "object", "description": "x" * 20_000}, "larger than"),
        ("nosuch", "unknown output schema"),
        ({"type": "array"}, "top level must be"),
    ],
)
async def test_the_api_refuses_a_hostile_output_schema(
    daemon: RunningDaemon, api: httpx.AsyncClient, schema: object, said: str
) -> None:
    r = await api.post("/api/agents", json={"prompt": "x", "output_schema": schema})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "output_schema" in message and said in message
    assert await daemon.deck._store.list_agents(include_archived=True) == []


async def test_the_api_takes_a_builtin_output_schema(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    body = {"prompt": "x", "output_schema": "status", "scenario": "chat", "keep_alive": False}
    r = await api.post("/api/agents", json=body)
    assert r.status_code == 201, r.text
    agent = await daemon.deck._store.get_agent(r.json()["id"])
    assert agent is not None and agent.spec.output_schema == BUILTIN["status"]
