"""The usage rollup and query (hour and day buckets: SQL that differs between
backends), budgets, and approvals with remembered grants, on both backends."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.events import CostUpdated
from agentdeck.core.usage import Bucket, BudgetScope, UsageGroup
from agentdeck.store import Store
from agentdeck.store.approvals import ApprovalStore
from agentdeck.store.usage import UsageStore

from .conftest import make_agent

pytestmark = pytest.mark.anyio

DAY = 86_400.0
T0 = 100 * DAY  # a UTC midnight


async def test_costs_roll_up_by_hour_and_day_per_project(store: Store) -> None:
    web = make_agent("aw").with_changes(spec=AgentSpec(prompt="p", project="/p/web", owner="alice"))
    api = make_agent("aa").with_changes(spec=AgentSpec(prompt="p", project="/p/api", owner="bob"))
    for agent, ts, delta in (
        (web, T0 + 60, 0.25),
        (web, T0 + 3600 + 5, 0.5),  # the next hour, the same day
        (api, T0 + DAY + 7, 1.0),  # the next day
        (web, T0 + DAY + 3599.5, 0.125),
    ):
        event = CostUpdated(
            agent_id=agent.id, ts=ts, cost_usd=9, input_tokens=10, output_tokens=2, delta_usd=delta
        )
        await store.record([event], agent)
    usage = UsageStore(store)
    hours = await usage.points(since=T0, until=T0 + 2 * DAY, bucket=Bucket.HOUR, by=UsageGroup.NONE)
    assert [(p.start, p.figures.cost_usd) for p in hours] == [
        (T0, 0.25),
        (T0 + 3600, 0.5),
        (T0 + DAY, 1.125),
    ]
    days = await usage.points(
        since=T0, until=T0 + 2 * DAY, bucket=Bucket.DAY, by=UsageGroup.PROJECT
    )
    assert [(p.start, p.key, p.figures.cost_usd, p.figures.results) for p in days] == [
        (T0, "/p/web", 0.75, 2),
        (T0 + DAY, "/p/api", 1.0, 1),
        (T0 + DAY, "/p/web", 0.125, 1),
    ]
    assert await usage.spent(since=T0, scope=BudgetScope.USER, name="alice") == 0.875
    await usage.set_budget("project", "/p/web", 2.5)
    assert await usage.budget(BudgetScope.PROJECT, "/p/web") == 2.5
    await usage.remove_budget("project", "/p/web")
    assert await usage.budget(BudgetScope.PROJECT, "/p/web") is None


async def test_a_remembered_answer_is_a_grant_every_store_reads(store: Store) -> None:
    approvals = ApprovalStore(store)
    request = Approval(
        id="ap000000000001",
        agent_id="a1",
        tool="Bash",
        input={"command": "make test"},
        reason="asks",
        grant_key="template:engineer",
        state=ApprovalState.PENDING,
        created_at=1.0,
        expires_at=1e12,
    )
    await approvals.create(request)
    answered = await approvals.decide(
        request.id,
        ApprovalState.ALLOWED,
        by="user:cli",
        remember=GrantScope.PERSISTENT,
        grant_rule="Bash(make *)",
    )
    assert answered is not None and answered.state is ApprovalState.ALLOWED
    again = await approvals.decide(request.id, ApprovalState.DENIED, by="user:web")
    assert again is None  # answered once
    grants = await ApprovalStore(store).grants_for("template:engineer", "a2")
    assert [(g.rule, g.decision, g.scope) for g in grants] == [
        ("Bash(make *)", "allow", GrantScope.PERSISTENT)
    ]
