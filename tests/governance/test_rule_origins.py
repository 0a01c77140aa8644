"""A decision names the rule that made it and where that rule came from: the
agent's own --allow / --deny is not its profile's, a parent's rule is not its
child's, the deck's own rules are agentdeck's. Both in the live governor (a real
run's audit log, the verdicts of agents in the store) and in ``policy replay``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import Event, PermissionResolved, ToolCalled, ToolReturned
from agentdeck.core.policy import Decision
from agentdeck.governance.governor import Governor
from agentdeck.governance.replay import OWN_RULES, ReplayQuery, candidate_profile, replay
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio]


def agent_row(agent_id: str, cwd: str, parent: str | None = None, **spec: Any) -> Agent:
    now = time.time()
    return Agent(
        id=agent_id, name=f"name-{agent_id}", state=AgentState.DONE,
        spec=AgentSpec(prompt="p", **spec), cwd=cwd, created_at=now, updated_at=now,
        source=AgentSource.AGENTDECK, parent_id=parent,
    )  # fmt: skip


@pytest.fixture
async def store(settings: Settings) -> Any:
    settings.ensure_home()
    opened = Store.open(settings.db_path)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.mark.cli
async def test_a_real_run_says_whose_rule_allowed_each_call(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    """Under the built-in strict, `python3` is allowed by the agent's own --allow,
    `ls` by strict's list: the audit log says so, and never that strict allows python3."""
    store, runner = deck
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]}
        for c in ("python3 -c 'print(6*7)'", "ls")
    ]
    turns.append({"reply": [{"text": "Done."}]})
    scenario = tmp_path / "script.yaml"
    scenario.write_text(yaml.safe_dump({"name": "s", "turns": turns}))
    spec = AgentSpec(
        prompt="go", scenario=str(scenario), profile="strict", allow=("Bash(python3:*)",)
    )
    session = await runner.start(spec)
    await session.wait_finished(timeout=60)
    entries = [e for e in await store.read_audit() if e.agent_id == session.agent.id]
    reasons = {e.rule: e.reason for e in entries}
    assert [str(e.decision) for e in entries] == ["allow", "allow"]
    own = reasons["Bash(python3:*)"]
    assert f"agent {session.agent.id}'s own allow rules" in own
    assert "profile strict" not in own
    assert "in the allow list of profile strict" in reasons["Bash(ls:*)"]


async def test_the_governor_tells_the_agent_s_rules_from_its_profile_s(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    governor = Governor(store, settings)
    agent = agent_row(
        "a1", str(tmp_path), profile="strict", allow=("Bash(python3:*)",), deny=("Bash(ls -R:*)",)
    )
    await store.save_agent(agent)

    async def verdict(command: str) -> Any:
        return await governor.verdict(agent, "Bash", {"command": command}, [])

    mine = await verdict("python3 x.py")
    assert (mine.decision, mine.rule, mine.source) == (
        Decision.ALLOW,
        "Bash(python3:*)",
        "agent:a1",
    )
    assert (
        mine.reason
        == "command `python3 x.py` allowed: `Bash(python3:*)` in agent a1's own allow rules"
    )
    theirs = await verdict("ls")
    assert (theirs.decision, theirs.source) == (Decision.ALLOW, "profile:strict")
    assert "in the allow list of profile strict" in theirs.reason
    both = await verdict("ls && python3 x.py")
    assert both.source == "profile:strict + agent:a1"
    refused = await verdict("ls -R /")
    assert (refused.decision, refused.source) == (Decision.DENY, "agent:a1")
    assert "in agent a1's own deny rules" in refused.reason
    # The deck's secrets and its own tools are agentdeck's, not the profile's.
    token = await governor.verdict(
        agent, "Read", {"file_path": str(settings.home_dir / "token")}, []
    )
    assert (token.decision, token.source) == (Decision.DENY, "agentdeck")
    deck_tool = await governor.verdict(agent, "mcp__deck__spawn", {}, [])
    assert (deck_tool.decision, deck_tool.source) == (Decision.ALLOW, "agentdeck")
    assert "profile strict" not in deck_tool.reason


async def test_a_parent_s_rule_is_said_to_be_the_parent_s(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """A child's profile holds its parent's deny rules (``meet``): the reason says
    they are the parent's profile's, and a rule both hold stays the child's own."""
    above = tmp_path / "above.yaml"
    above.write_text(yaml.safe_dump({
        "name": "above", "default": "ask", "allow": ["Bash(make:*)", "Bash(curl:*)"],
        "deny": ["Bash(curl:*)", "Bash(make clean)"], "disabled_tools": ["WebSearch"],
    }))  # fmt: skip
    below = tmp_path / "below.yaml"
    below.write_text(yaml.safe_dump({
        "name": "below", "default": "ask", "allow": ["Bash(make:*)"], "deny": ["Bash(make clean)"],
    }))  # fmt: skip
    parent = agent_row("p1", str(tmp_path), profile=str(above))
    child = agent_row("c1", str(tmp_path), parent="p1", profile=str(below))
    for agent in (parent, child):
        await store.save_agent(agent)
    governor = Governor(store, settings)
    await governor.inherit(child)

    async def verdict(tool: str, tool_input: dict[str, Any]) -> Any:
        return await governor.verdict(child, tool, tool_input, [])

    curl = await verdict("Bash", {"command": "curl example.com"})
    assert (curl.decision, curl.source) == (Decision.DENY, "profile:above")
    assert "in the deny list of profile above, inherited from its parent" in curl.reason
    assert "profile below" not in curl.reason
    clean = await verdict("Bash", {"command": "make clean"})
    assert (clean.decision, clean.source) == (Decision.DENY, "profile:below")
    assert "in the deny list of profile below" in clean.reason
    search = await verdict("WebSearch", {"query": "q"})
    assert (search.decision, search.source) == (Decision.DENY, "profile:above")
    assert "disabled_tools list of profile above, inherited" in search.reason


async def test_policy_replay_groups_agents_own_rules_apart_from_the_profile_s(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """Two agents' own `Bash(python3:*)` make one group whose source is the agents'
    own rules; the candidate's own allow is the candidate's."""
    for name in ("a1", "a2"):
        await store.save_agent(agent_row(name, str(tmp_path), allow=("Bash(python3:*)",)))
    now = time.time()
    events: list[Event] = []
    for agent, use, command in (("a1", "t1", "python3 x.py"), ("a2", "t2", "python3 y.py"),
                                ("a1", "t3", "git status")):  # fmt: skip
        events += [
            ToolCalled(agent_id=agent, ts=now, tool_use_id=use, tool="Bash",
                       input={"command": command}),
            PermissionResolved(agent_id=agent, ts=now, request_id=use, decision="deny",
                               reason="r", rule=None, by="policy"),
            ToolReturned(agent_id=agent, ts=now, tool_use_id=use, output="no", is_error=True),
        ]  # fmt: skip
    await store.append(events)
    report = await replay(store, settings, candidate_profile("strict"), ReplayQuery())
    groups = {(g.change, g.rule): g for g in report.groups}
    own = groups[("deny→allow", "Bash(python3:*)")]
    assert (own.count, own.source) == (2, OWN_RULES)
    assert {e.agent_id for e in own.examples} == {"a1", "a2"}
    assert all("own allow rules" in e.reason and "strict" not in e.reason for e in own.examples)
    profile_s = groups[("deny→allow", "Bash(git status:*)")]
    assert (profile_s.count, profile_s.source) == (1, "profile:strict")
