"""The agent tree's rules. Pure: no I/O, no clock.

- **Limits**: how deep the tree may grow, how many live children one parent may
  have, how many agents may be live at all. ``check_spawn`` names the first one
  a spawn would break, in words the orchestrating model can act on.
- **Budgets**: a child's budget is carved out of what its parent has left, and
  the cost of a subtree rolls up to every ancestor. A ``BudgetNode`` per agent
  holds its limit and what its subtree spent; ``charge`` adds a cost increase to
  a node and its ancestors and reports the first one over its limit, so the root's
  budget caps the whole tree. ``available`` is what a new child may still be
  given: the node's limit, less what its subtree spent, less what its live
  children were given and have not spent yet (their reservations).
- **Names and references**: a child's name is unique among its siblings; an
  ``agent`` argument is an id, a unique id prefix or a child's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agentdeck.core.agent import MIN_PREFIX, Agent
from agentdeck.core.guardrails import Stop, StopKind

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class TreeLimits:
    max_depth: int = 3  # a root is at depth 0; its children at 1
    max_children: int = 8  # live children per parent
    max_live: int = 32  # live agents in all


class SpawnRefused(Exception):
    """A spawn breaks a limit; the message says which and what to do."""


def check_spawn(
    limits: TreeLimits, *, parent_depth: int, live_children: int, live_total: int
) -> None:
    """Raise ``SpawnRefused`` when a new child of a parent at ``parent_depth``
    would break a limit."""
    if parent_depth + 1 > limits.max_depth:
        raise SpawnRefused(
            f"cannot spawn: the agent tree may be {limits.max_depth} levels deep and you are "
            f"at level {parent_depth}; do this work yourself or hand it back to your parent"
        )
    if live_children >= limits.max_children:
        raise SpawnRefused(
            f"cannot spawn: you already have {live_children} live children (the limit is "
            f"{limits.max_children}); wait for some with wait_for_agents, or kill_agent those "
            "you no longer need"
        )
    if live_total >= limits.max_live:
        raise SpawnRefused(
            f"cannot spawn: {live_total} agents are live on this deck (the limit is "
            f"{limits.max_live}); wait for your children to finish first"
        )


def child_name(wanted: str | None, template: str, siblings: Iterable[str]) -> str:
    """``wanted`` if free among the siblings (else ``SpawnRefused``); by default
    the template's name and the first free number (``engineer-1``)."""
    taken = set(siblings)
    if wanted:
        if not NAME_PATTERN.fullmatch(wanted):
            raise SpawnRefused(
                f"cannot spawn: name {wanted!r} must be letters, digits, '.', '_' or '-' "
                "(at most 64, starting with a letter or digit)"
            )
        if wanted in taken:
            raise SpawnRefused(
                f"cannot spawn: you already have a child named {wanted!r}; choose another name"
            )
        return wanted
    n = 1
    while f"{template}-{n}" in taken:
        n += 1
    return f"{template}-{n}"


def resolve_ref(ref: str, candidates: Sequence[Agent]) -> Agent | None:
    """The candidate ``ref`` names: exact id, else unique id prefix (4+ chars),
    else exact name; None when nothing or several match."""
    ref = ref.strip()
    for agent in candidates:
        if agent.id == ref:
            return agent
    if len(ref) >= MIN_PREFIX:
        hits = [a for a in candidates if a.id.startswith(ref)]
        if len(hits) == 1:
            return hits[0]
    named = [a for a in candidates if a.name == ref]
    return named[0] if len(named) == 1 else None


def _usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


@dataclass(eq=False)
class BudgetNode:
    """One agent's place in the tree's money: its limit (None: no limit of its
    own) and what it and its descendants spent."""

    agent_id: str
    limit: float | None
    spent: float = 0.0
    parent: BudgetNode | None = None
    children: dict[str, BudgetNode] = field(default_factory=dict)
    live: bool = True

    def __post_init__(self) -> None:
        if self.parent is not None:
            self.parent.children[self.agent_id] = self

    def reserved(self) -> float:
        """What live children with a limit were given and have not spent yet."""
        return sum(
            max(0.0, c.limit - c.spent)
            for c in self.children.values()
            if c.live and c.limit is not None
        )

    def available(self) -> float | None:
        """What a new child of this node may still be given; None: no limit."""
        if self.limit is not None:
            return self.limit - self.spent - self.reserved()
        if self.parent is not None:
            return self.parent.available()
        return None

    def charge(self, delta_usd: float) -> Stop | None:
        """Count a cost increase of this node's agent: it rolls up to every
        ancestor. A ``Stop`` for the highest node whose subtree (itself included)
        is now over its limit (the root's budget caps the whole tree, the agent's
        own spending included), else None. Every call over a limit reports it:
        each agent that keeps spending must be stopped."""
        delta = max(0.0, delta_usd)
        node: BudgetNode | None = self
        over: BudgetNode | None = None
        while node is not None:  # one walk: a charge is on every cost increase
            node.spent += delta  # the subtree's: the node's own cost and its descendants'
            if node.limit is not None and node.spent > node.limit:
                over = node
            node = node.parent
        return None if over is None else _tree_stop(over)


def over_limit(node: BudgetNode) -> Stop | None:
    """A ``Stop`` for the highest of ``node`` and its ancestors whose subtree is
    over its limit (as ``charge`` reports it, nothing charged), else None."""
    over: BudgetNode | None = None
    at: BudgetNode | None = node
    while at is not None:
        if at.limit is not None and at.spent > at.limit:
            over = at
        at = at.parent
    return None if over is None else _tree_stop(over)


def _tree_stop(over: BudgetNode) -> Stop | None:
    if over.limit is None:
        return None
    return Stop(
        StopKind.TREE_BUDGET,
        f"tree budget exceeded: the agents under {over.agent_id} spent {_usd(over.spent)} "
        f"of its {_usd(over.limit)}",
        over.limit,
        over.spent,
    )


def top_of(node: BudgetNode) -> BudgetNode:
    """The highest node of ``node``'s tree that is known."""
    while node.parent is not None:
        node = node.parent
    return node


def subtree_spend(
    edges: Sequence[tuple[str, str | None]], costs: Mapping[str, float]
) -> dict[str, float]:
    """What each agent and its descendants spent, from ``(id, parent_id)`` pairs
    and each agent's own cost (one pass up each agent's line of ancestors)."""
    parents = dict(edges)
    spend = dict.fromkeys(parents, 0.0)
    for agent_id, _ in edges:
        cost = max(0.0, costs.get(agent_id, 0.0))
        at: str | None = agent_id
        seen: set[str] = set()
        while at is not None and at in spend and at not in seen:  # a cycle ends the walk
            seen.add(at)
            spend[at] += cost
            at = parents[at]
    return spend


def carve(requested: float | None, available: float | None) -> float | None:
    """The budget a new child gets: what was asked, cut to what the parent has
    left; None when nothing was asked (it then spends from what its parent has
    left, the roll-up caps it, and it reserves nothing). ``SpawnRefused`` when
    nothing is left."""
    if available is None:
        return requested
    if available <= 0:
        raise SpawnRefused(
            f"cannot spawn: your budget is spent or given to your other children "
            f"({_usd(max(0.0, available))} left); finish with what you have, or wait for "
            "children to finish (what they did not spend comes back)"
        )
    return None if requested is None else min(requested, available)
