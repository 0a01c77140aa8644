"""The agent page shows an agent's structured result (core.output_schema), escaped."""

from __future__ import annotations

from dataclasses import replace

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
