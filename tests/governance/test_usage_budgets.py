"""Usage and the daily budgets of users and projects, on real agents: the real
CLI against the scripted model, a real SQLite store."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from agentdeck.cli.render import event_line
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.core.usage import Bucket, UsageGroup
from agentdeck.errors import PolicyDenied
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from agentdeck.store.usage import UsageStore
from tests.governance.test_enforcement import write_profile, write_scenario

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_usage_figures_are_the_sum_of_the_agents_costs(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path)
    scenario = write_scenario(tmp_path, "echo one", "echo two")
    for owner, project in (("alice", "/p/one"), ("alice", "/p/two"), ("bob", "/p/one")):
        spec = AgentSpec(
            prompt="go", scenario=scenario, profile=profile, owner=owner, project=project
        )
        session = await runner.start(spec)
        await session.wait_finished(timeout=60)
    agents = await store.list_agents()
    assert len(agents) == 3 and all(a.state == AgentState.DONE for a in agents)
    assert all(a.cost_usd > 0 for a in agents)
    usage = UsageStore(store)
    now = time.time()

    async def by(group: UsageGroup) -> dict[str, float]:
        points = await usage.points(since=now - 3600, until=now + 1, bucket=Bucket.HOUR, by=group)
        sums: dict[str, float] = {}
        for p in points:
            sums[p.key] = sums.get(p.key, 0.0) + p.figures.cost_usd
        return sums

    def agent_sums(key: str) -> dict[str, float]:
        sums: dict[str, float] = {}
        for a in agents:
            k = a.spec.owner if key == "user" else a.spec.project
            assert k is not None
            sums[k] = sums.get(k, 0.0) + a.cost_usd
        return sums

    total = sum(a.cost_usd for a in agents)
    assert math.isclose(sum((await by(UsageGroup.NONE)).values()), total, rel_tol=1e-9)
    users, projects = await by(UsageGroup.USER), await by(UsageGroup.PROJECT)
    assert users.keys() == {"alice", "bob"}
    for key, value in agent_sums("user").items():
        assert math.isclose(users[key], value, rel_tol=1e-9)
    for key, value in agent_sums("project").items():
        assert math.isclose(projects[key], value, rel_tol=1e-9)
    # Tokens too: what the agents were charged, turn by turn.
    points = await usage.points(
        since=now - 3600, until=now + 1, bucket=Bucket.DAY, by=UsageGroup.NONE
    )
    assert sum(p.figures.input_tokens for p in points) == sum(a.input_tokens for a in agents)
    assert sum(p.figures.output_tokens for p in points) == sum(a.output_tokens for a in agents)


async def test_a_user_budget_stops_that_users_agents_and_refuses_new_ones(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    await UsageStore(store).set_budget("user", "alice", 0.01)
    profile = write_profile(tmp_path)
    scenario = write_scenario(tmp_path, "echo one", "echo two", "echo three")
    session = await runner.start(
        AgentSpec(prompt="go", scenario=scenario, profile=profile, owner="alice")
    )
    await session.wait_finished(timeout=60)
    first = await store.get_agent(session.agent.id)
    assert first.state == AgentState.ERROR
    assert first.last_error and "user alice's daily budget exceeded" in first.last_error
    events = await store.read(agent_id=first.id)
    kinds = [e.data.get("kind") for e in events if e.type == EventType.ERROR_OCCURRED]
    assert "guardrail:user_budget" in kinds
    warnings = [e for e in events if e.type == EventType.BUDGET_WARNING]
    assert [(w.data["scope"], w.data["name"]) for w in warnings] == [("user", "alice")]
    assert "80 %" in warnings[0].data["message"]
    shown = event_line(warnings[0].to_dict())  # `agentdeck logs` shows it
    assert shown is not None and "user alice's daily budget is" in shown.plain

    # Over her budget: her next agent is refused, with the reason, and spends nothing.
    with pytest.raises(PolicyDenied, match="user alice's daily budget exceeded"):
        await runner.start(
            AgentSpec(prompt="go", scenario=scenario, profile=profile, owner="alice")
        )
    refused = next(a for a in await store.list_agents() if a.id != first.id)
    assert refused.state == AgentState.ERROR and refused.cost_usd == 0
    assert refused.last_error and "user alice's daily budget" in refused.last_error

    # Bob has no budget: his agent runs to the end.
    other = await runner.start(
        AgentSpec(prompt="go", scenario=scenario, profile=profile, owner="bob")
    )
    await other.wait_finished(timeout=60)
    assert (await store.get_agent(other.agent.id)).state == AgentState.DONE
    # The warning was said once today, not again for the refused agent.
    all_warnings = await UsageStore(store).warnings(time.time() - 3600)
    assert len(all_warnings) == 1


async def test_a_project_budget_refuses_a_new_agent_of_that_project(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    usage = UsageStore(store)
    profile = write_profile(tmp_path)
    scenario = write_scenario(tmp_path, "echo one")
    session = await runner.start(
        AgentSpec(prompt="go", scenario=scenario, profile=profile, project="/p/web")
    )
    await session.wait_finished(timeout=60)
    assert (await store.get_agent(session.agent.id)).cost_usd > 0
    await usage.set_budget("project", "/p/web", 0.0001)  # already spent more today
    with pytest.raises(PolicyDenied, match="project /p/web's daily budget exceeded"):
        await runner.start(
            AgentSpec(prompt="go", scenario=scenario, profile=profile, project="/p/web")
        )
    (budget,) = await usage.budgets(today=time.time() - 3600)
    assert budget.scope == "project" and budget.spent_today_usd > budget.daily_usd
    # Raising the budget lets the project's agents start again.
    await usage.set_budget("project", "/p/web", 100)
    again = await runner.start(
        AgentSpec(prompt="go", scenario=scenario, profile=profile, project="/p/web")
    )
    await again.wait_finished(timeout=60)
    assert (await store.get_agent(again.agent.id)).state == AgentState.DONE
