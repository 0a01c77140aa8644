"""The agent tree as rows of a view: each agent under its parent, with the cost of
its subtree. Pure.

Apart from ``core.tree`` because the CLI's quick path draws
``ls --tree`` with it, from the daemon's JSON read by attribute: it reads only an
agent's ``id``, ``parent_id``, ``created_at`` and ``cost_usd``, and imports nothing
(the dataclass machinery would cost that path ~10 ms).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentdeck.core.agent import Agent


class TreeRow:
    """One agent in a tree view: its depth, how many children it has, and the
    cost of it and every agent below it."""

    __slots__ = ("agent", "children", "depth", "tree_cost")

    def __init__(self, agent: Agent, depth: int, children: int, tree_cost: float) -> None:
        self.agent, self.depth, self.children, self.tree_cost = agent, depth, children, tree_cost


def tree_rows(roots: Sequence[Agent], below: Sequence[Agent]) -> list[TreeRow]:
    """``roots`` in their order, each followed by its descendants depth-first
    (siblings oldest first). An agent of ``below`` whose parent is not shown is
    left out; a cycle in bad data cannot loop."""
    kids: dict[str, list[Agent]] = {}
    for agent in sorted(below, key=lambda a: (a.created_at, a.id)):
        if agent.parent_id:
            kids.setdefault(agent.parent_id, []).append(agent)
    costs: dict[str, float] = {}

    def cost(agent: Agent, seen: frozenset[str]) -> float:
        if agent.id not in costs:
            costs[agent.id] = agent.cost_usd + sum(
                cost(c, seen | {agent.id}) for c in kids.get(agent.id, []) if c.id not in seen
            )
        return costs[agent.id]

    rows: list[TreeRow] = []
    placed: set[str] = set()

    def walk(agent: Agent, depth: int) -> None:
        if agent.id in placed:
            return
        placed.add(agent.id)
        children = kids.get(agent.id, [])
        rows.append(TreeRow(agent, depth, len(children), cost(agent, frozenset())))
        for child in children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return rows
