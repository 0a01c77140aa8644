"""The agent page says which skills and subagents an agent had (its spec's,
from its template), the subagent's description as text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.agent_file import AgentFile
from agentdeck.core.subagents import Subagent

from .conftest import RunningDaemon
from .dashboard_support import logged_in
from .test_dashboard import make_agent, seed

pytestmark = pytest.mark.anyio


async def test_the_agent_page_shows_its_skills_and_subagents(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    hostile = Subagent("checker", '"><script>alert(1)</script>', "Check.")
    claude = AgentFile(skills=("greet", "agentdeck:status-report"), subagents=(hostile,))
    agent = make_agent("sk1", AgentState.DONE)
    await seed(store, replace(agent, spec=replace(agent.spec, claude=claude)))
    await seed(store, make_agent("sk2", AgentState.DONE))
    async with logged_in(daemon) as web:
        page = (await web.get("/agents/sk1")).text
        plain = (await web.get("/agents/sk2")).text
    assert '<dd class="mono" id="agent-skills">greet, agentdeck:status-report</dd>' in page
    assert ">checker</span>" in page and "<script>alert(1)</script>" not in page
    assert 'id="agent-skills"' not in plain and 'id="agent-subagents"' not in plain
