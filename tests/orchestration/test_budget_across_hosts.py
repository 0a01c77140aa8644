"""An agent tree's budget is the cluster's figure: two decks (two hosts' processes)
on one PostgreSQL database each hold a copy of the tree's money, and neither may
spend or give away what the other already has.

No Claude Code runs here: on a deck with runner hosts a spawned child waits
``queued`` for a host, which is all a reservation needs; costs are written to the
agents' rows as a session's turn end writes them, then charged as its guard does."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.guardrails import StopKind
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.orchestration.host import ToolError
from agentdeck.orchestration.service import Orchestrator
from agentdeck.orchestration.templates import resolve, user_agents_dir
from agentdeck.runner import steering
from tests.conftest import make_settings
from tests.contract.helpers import settled
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


@pytest.fixture
async def two_hosts(tmp_path: Path, pg_url: str) -> AsyncIterator[tuple[Deck, Deck]]:
    decks: list[Deck] = []
    try:
        for name in ("a", "b"):
            settings = make_settings(tmp_path / name, database_url=pg_url)
            decks.append(await open_deck(settings))
        yield decks[0], decks[1]
    finally:
        for deck in decks:
            await deck.close()
        steering.set_this_host(None)


def bash(command: str) -> dict[str, object]:
    return {"tool_use": {"name": "Bash", "input": {"command": command, "description": "run"}}}


def orch(deck: Deck) -> Orchestrator:
    return deck._orchestration


async def root(deck: Deck, budget: float) -> Agent:
    return await deck.create_agent(AgentSpec(prompt="lead", scenario="chat", budget_usd=budget))


async def spent(deck: Deck, agent_id: str, cost: float) -> Agent:
    """The agent's row as its turn's end writes it (before its guard charges)."""
    agent = await deck.get_agent(agent_id)
    changed = agent.with_changes(cost_usd=cost)
    await deck._store.save_agent(changed)
    return changed


async def test_two_children_spawned_at_once_on_two_hosts_never_reserve_the_same_money(
    two_hosts: tuple[Deck, Deck],
) -> None:
    a, b = two_hosts
    lead = await root(a, 1.0)
    first, second = await asyncio.gather(
        orch(a).spawn(lead.id, "task one", name="one", budget_usd=0.7),
        orch(b).spawn(lead.id, "task two", name="two", budget_usd=0.7),
    )
    given = sorted([first.spec.budget_usd or 0.0, second.spec.budget_usd or 0.0])
    assert given == pytest.approx([0.3, 0.7])  # the second carved what the first left
    # Nothing left on either host: a third child is refused wherever it is asked.
    for deck in (a, b):
        with pytest.raises(ToolError, match=r"spent or given to your other children"):
            await orch(deck).spawn(lead.id, "task three", budget_usd=0.1)


async def test_a_host_carves_from_what_a_child_on_another_host_reserved_and_spent(
    two_hosts: tuple[Deck, Deck],
) -> None:
    a, b = two_hosts
    lead = await root(a, 1.0)
    await orch(b).budgets.node(lead)  # b knew the tree before a spawned in it
    child = await orch(a).spawn(lead.id, "task", name="one", budget_usd=0.5)
    await spent(a, child.id, 0.1)
    await spent(a, lead.id, 0.2)
    # Left: 1.0 - 0.3 spent - 0.4 the child was given and did not spend yet.
    other = await orch(b).spawn(lead.id, "task", name="two", budget_usd=0.9)
    assert other.spec.budget_usd == pytest.approx(0.3)


async def test_the_tree_is_stopped_when_two_hosts_together_pass_its_budget(
    two_hosts: tuple[Deck, Deck],
) -> None:
    a, b = two_hosts
    lead = await root(a, 1.0)
    worker_a = await orch(a).spawn(lead.id, "task", name="on-a")
    worker_b = await orch(a).spawn(lead.id, "task", name="on-b")
    on_a = await orch(a).budget(await a.get_agent(worker_a.id))
    on_b = await orch(b).budget(await b.get_agent(worker_b.id))

    await spent(b, worker_b.id, 0.7)
    assert on_b.charge(0.7) is None  # 0.70 of 1.00
    await orch(b).budgets.wait_checks()
    await spent(a, worker_a.id, 0.5)
    assert on_a.charge(0.5) is None  # a's copy alone: 0.50 of 1.00
    await orch(a).budgets.wait_checks()  # read again after the charge: 1.20 of 1.00
    # a's next charge is refused at once, from its copy read again.
    stop = on_a.charge(0.01)
    assert stop is not None and stop.kind is StopKind.TREE_BUDGET
    assert stop.message == (
        f"tree budget exceeded: the agents under {lead.id} spent $1.21 of its $1.00"
    )
    # b's copy is a charge behind; read again after it, its next one is refused.
    on_b.charge(0.01)
    await orch(b).budgets.wait_checks()
    again = on_b.charge(0.01)
    assert again is not None and again.kind is StopKind.TREE_BUDGET
    assert await orch(b).budgets.check(worker_b.id) is not None


@pytest.mark.parametrize("bad", [-1.0, 0.0, math.nan, math.inf])
async def test_a_negative_zero_or_nan_budget_is_refused(
    two_hosts: tuple[Deck, Deck], bad: float
) -> None:
    a, _ = two_hosts
    lead = await root(a, 1.0)
    with pytest.raises(ToolError, match="budget_usd must be a positive number"):
        await orch(a).spawn(lead.id, "task", budget_usd=bad)
    assert await orch(a).children(lead.id) == []


async def test_a_child_on_a_host_is_stopped_when_another_hosts_spend_passes_its_tree_budget(
    tmp_path: Path, pg_url: str
) -> None:
    """The real CLI on a runner host (the deck serving as one, in this process):
    while its child works, the tree's root spends on another host (its row
    written); the child's next charge reads the tree again and stops it with the
    guardrail's error, as if it had passed the limit alone."""
    settings = make_settings(tmp_path, database_url=pg_url, runner_poll_seconds=0.2)
    built_in = resolve(settings, "engineer")  # in plain text, without its status schema
    user_agents_dir(settings).mkdir(parents=True, exist_ok=True)
    (user_agents_dir(settings) / "engineer.md").write_text(
        f"---\nname: engineer\ndescription: {built_in.description}\n---\n{built_in.prompt}\n"
    )
    scenario = tmp_path / "over.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "over",
                "turns": [{"reply": [{"text": "LEAD"}]}],
                "conversations": [
                    {
                        "when": {"first_user_text_contains": "TASK-X"},
                        "turns": [
                            {"reply": [bash("pwd")]},
                            # The turn's end waits: the other host spends meanwhile.
                            {"reply": [{"text": "X-DONE"}], "delay": 3},
                        ],
                    }
                ],
            }
        )
    )
    deck = await open_deck(settings)
    try:
        # The root waits for a host with a GPU: its row stands for a host elsewhere.
        spec = AgentSpec(prompt="lead", scenario=str(scenario), budget_usd=1.0, labels=("gpu",))
        lead = await deck.create_agent(spec)
        child = await orch(deck).spawn(lead.id, "TASK-X", name="x")
        await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=2))

        async def working() -> bool:
            return any(e.type == "tool_called" for e in await deck.events(agent_id=child.id))

        await eventually(working, timeout=60, what="the child at work")
        await spent(deck, lead.id, 0.99)  # the root's spend on the other host
        stopped = await settled(deck, child.id, lambda a: a.state is AgentState.ERROR)
        found = re.fullmatch(
            rf"tree budget exceeded: the agents under {lead.id} spent \$(\S+) of its \$1\.00",
            stopped.last_error or "",
        )
        assert found is not None, stopped.last_error
        own = stopped.cost_usd
        assert 0 < own < 1.0  # alone, the child was far within the tree's budget
        assert float(found[1]) == pytest.approx(0.99 + own, abs=0.006)
        errors = [
            e.data for e in await deck.events(agent_id=child.id) if e.type == "error_occurred"
        ]
        assert [e["kind"] for e in errors] == ["guardrail:tree_budget"]
    finally:
        await deck.close()
        steering.set_this_host(None)
