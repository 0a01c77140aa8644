"""The agent page says which skills and subagents an agent had (its spec's,
from its template), the subagent's description as text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.agent_file import AgentFile
from agentdeck.core.skills import OFFERED
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


async def test_the_skills_it_was_offered_show_on_its_page_and_in_the_api(
    daemon: RunningDaemon,
) -> None:
    """What Claude Code offered it (recorded at its start) over its template's list."""
    store = daemon.deck._store
    agent = make_agent("sk3", AgentState.IDLE, extra={OFFERED: ["greet", "agentdeck:<b>"]})
    claude = AgentFile(skills=("greet",))
    await seed(store, replace(agent, spec=replace(agent.spec, claude=claude)))
    async with logged_in(daemon) as web:
        page = (await web.get("/agents/sk3")).text
    assert 'id="agent-skills" title="the skills Claude Code offered it' in page
    assert ">greet, agentdeck:&lt;b&gt;</dd>" in page and "<b>" not in page
    async with daemon.client() as api:
        one = (await api.get("/api/agents/sk3")).json()
        listed = (await api.get("/api/agents")).json()["agents"]
    assert one["skills"] == ["greet", "agentdeck:<b>"]
    assert next(a for a in listed if a["id"] == "sk3")["skills"] == one["skills"]
