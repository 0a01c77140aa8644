"""The agent tree's rules: limits, names, references, budgets, the tree view."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.guardrails import Guard, Limits, StopKind
from agentdeck.core.tree import (
    BudgetNode,
    SpawnRefused,
    TreeLimits,
    carve,
    check_spawn,
    child_name,
    resolve_ref,
)
from agentdeck.core.tree_rows import tree_rows


def agent(
    agent_id: str, name: str, parent: str | None = None, cost: float = 0.0, at: float = 0.0
) -> Agent:
    return Agent(
        id=agent_id,
        name=name,
        state=AgentState.IDLE,
        spec=AgentSpec(prompt="p"),
        cwd="/w",
        created_at=at,
        updated_at=at,
        parent_id=parent,
        cost_usd=cost,
    )


def test_each_limit_is_refused_with_what_to_do_instead() -> None:
    limits = TreeLimits(max_depth=2, max_children=2, max_live=5)
    check_spawn(limits, parent_depth=1, live_children=1, live_total=4)
    with pytest.raises(SpawnRefused, match="2 levels deep and you are at level 2"):
        check_spawn(limits, parent_depth=2, live_children=0, live_total=0)
    with pytest.raises(SpawnRefused, match="already have 2 live children.*wait_for_agents"):
        check_spawn(limits, parent_depth=0, live_children=2, live_total=2)
    with pytest.raises(SpawnRefused, match="5 agents are live on this deck"):
        check_spawn(limits, parent_depth=0, live_children=0, live_total=5)


def test_child_names_are_unique_among_siblings() -> None:
    assert child_name(None, "engineer", []) == "engineer-1"
    assert child_name(None, "engineer", ["engineer-1", "engineer-3"]) == "engineer-2"
    assert child_name("parser", "engineer", ["printer"]) == "parser"
    with pytest.raises(SpawnRefused, match="already have a child named 'parser'"):
        child_name("parser", "engineer", ["parser"])
    with pytest.raises(SpawnRefused, match="must be letters"):
        child_name("../evil", "engineer", [])


def test_a_reference_is_an_id_a_unique_prefix_or_a_name() -> None:
    kids = [agent("a1aaaa01", "wa"), agent("a1aaaa02", "wb"), agent("a1bbbb03", "a1aaaa")]
    assert resolve_ref("a1aaaa02", kids) is kids[1]
    assert resolve_ref("a1bb", kids) is kids[2]
    assert resolve_ref("wa", kids) is kids[0]
    assert resolve_ref("a1aaaa", kids) is kids[2]  # an ambiguous prefix, but a name
    assert resolve_ref("a1aa", kids) is None  # ambiguous prefix, no such name
    assert resolve_ref("zz", kids) is None


def test_a_childs_budget_is_carved_from_what_the_parent_has_left() -> None:
    root = BudgetNode("r", limit=1.0)
    assert root.available() == 1.0
    first = BudgetNode("c1", limit=carve(0.6, root.available()), parent=root)
    assert first.limit == 0.6 and root.available() == pytest.approx(0.4)
    second = BudgetNode("c2", limit=carve(0.5, root.available()), parent=root)
    assert second.limit == pytest.approx(0.4)
    with pytest.raises(SpawnRefused, match="spent or given to your other children"):
        carve(0.1, root.available())
    first.live = False  # a finished child's unspent budget returns to the parent
    assert root.available() == pytest.approx(0.6)
    assert carve(0.5, None) == 0.5 and carve(None, None) is None
    # Nothing asked: it reserves nothing and spends from what is left.
    assert carve(None, root.available()) is None
    shared = BudgetNode("c3", limit=None, parent=root)
    assert root.available() == pytest.approx(0.6) and shared.available() == pytest.approx(0.6)


def test_a_child_without_a_limit_of_its_own_gives_its_ancestors_remainder() -> None:
    root = BudgetNode("r", limit=1.0, spent=0.25)
    middle = BudgetNode("m", limit=None, parent=root)
    assert middle.available() == pytest.approx(0.75)


def test_cost_rolls_up_and_the_roots_budget_caps_the_whole_tree() -> None:
    root = BudgetNode("r", limit=1.0)
    child = BudgetNode("c", limit=0.8, parent=root)
    grandchild = BudgetNode("g", limit=None, parent=child)
    assert grandchild.charge(0.4) is None
    assert (child.spent, root.spent) == (pytest.approx(0.4), pytest.approx(0.4))
    stop = grandchild.charge(0.45)  # the child's subtree now spent 0.85 of 0.8
    assert stop is not None and stop.kind is StopKind.TREE_BUDGET
    assert "agents under c spent $0.85 of its $0.80" in stop.message
    assert grandchild.charge(0.0) is not None  # every further call over a limit says so


def test_the_roots_own_spending_counts_against_its_tree() -> None:
    root = BudgetNode("r", limit=1.0)
    child = BudgetNode("c", limit=None, parent=root)
    assert child.charge(0.95) is None
    stop = root.charge(0.1)  # the orchestrator itself: 1.05 of 1.00 in all
    assert stop is not None and "agents under r spent $1.05 of its $1.00" in stop.message


def test_a_guard_charges_its_tree_and_stops_at_the_tree_budget() -> None:
    root = BudgetNode("r", limit=0.01)
    node = BudgetNode("c", limit=None, parent=root)
    guard = Guard(Limits(), started_at=0.0, tree=node)
    from agentdeck.core.events import CostUpdated

    assert (
        guard.observe(
            CostUpdated(agent_id="c", ts=1, cost_usd=0.005, input_tokens=1, output_tokens=1)
        )
        is None
    )
    stop = guard.observe(
        CostUpdated(agent_id="c", ts=2, cost_usd=0.02, input_tokens=1, output_tokens=1)
    )
    assert stop is not None and stop.kind is StopKind.TREE_BUDGET
    assert root.spent == pytest.approx(0.02)


@given(st.lists(st.floats(min_value=0, max_value=1), max_size=30))
def test_the_tree_never_spends_past_the_root_unnoticed(deltas: list[float]) -> None:
    root = BudgetNode("r", limit=1.0)
    leaf = BudgetNode("l", limit=None, parent=BudgetNode("m", limit=None, parent=root))
    stopped = False
    for delta in deltas:
        stopped = leaf.charge(delta) is not None or stopped
        assert stopped or root.spent <= 1.0
    assert root.spent == pytest.approx(sum(deltas))


def test_tree_rows_nest_children_depth_first_with_rolled_up_cost() -> None:
    boss = agent("a1", "boss", cost=0.1, at=1)
    wa = agent("a2", "wa", parent="a1", cost=0.2, at=2)
    wb = agent("a3", "wb", parent="a1", cost=0.3, at=3)
    sub = agent("a4", "sub", parent="a2", cost=0.05, at=4)
    lone = agent("a5", "lone", cost=1.0, at=5)
    stray = agent("a6", "stray", parent="gone", at=6)
    rows = tree_rows([lone, boss], [sub, wb, wa, stray])
    assert [(r.agent.name, r.depth, r.children) for r in rows] == [
        ("lone", 0, 0),
        ("boss", 0, 2),
        ("wa", 1, 1),
        ("sub", 2, 0),
        ("wb", 1, 0),
    ]
    assert rows[1].tree_cost == pytest.approx(0.65)
    assert rows[2].tree_cost == pytest.approx(0.25)


def test_subtree_spend_rolls_each_cost_up_its_line_and_survives_a_cycle() -> None:
    from agentdeck.core.tree import subtree_spend

    edges = [("r", None), ("a", "r"), ("b", "r"), ("c", "a"), ("x", "y"), ("y", "x")]
    costs = {"r": 0.1, "a": 0.2, "b": 0.3, "c": 0.4, "x": 1.0, "y": 1.0}
    spend = subtree_spend(edges, {**costs, "b": float("nan")})
    assert spend["r"] == pytest.approx(0.7)  # a NaN cost counts nothing
    assert spend["a"] == pytest.approx(0.6) and spend["c"] == pytest.approx(0.4)
    assert spend["x"] == pytest.approx(2.0)  # a broken tree ends its walk


def test_over_limit_names_the_highest_node_over_without_charging() -> None:
    from agentdeck.core.tree import over_limit, top_of

    top = BudgetNode("root", 1.0, spent=1.5)
    mid = BudgetNode("mid", 2.0, spent=1.5, parent=top)
    leaf = BudgetNode("leaf", None, spent=0.5, parent=mid)
    assert top_of(leaf) is top
    stop = over_limit(leaf)
    assert stop is not None and stop.kind is StopKind.TREE_BUDGET and "under root" in stop.message
    assert leaf.spent == 0.5 and top.spent == 1.5
    assert over_limit(BudgetNode("alone", 1.0, spent=1.0)) is None
