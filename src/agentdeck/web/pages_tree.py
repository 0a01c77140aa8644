"""The board as a tree: each agent an orchestrator started sits under it, in a
collapsible block, and a parent's row shows what its whole tree cost.

``branches`` builds the nested view of a page of root agents (one indexed query
per level of the tree); ``row_info`` is what one row needs when the stream
re-renders it alone (its depth, how many children it has, its tree's cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentdeck.core.agent import Agent
from agentdeck.core.tree_rows import tree_rows
from agentdeck.daemon.deck import Deck
from agentdeck.errors import NotFound

MAX_BELOW = 2000  # agents shown under one page of roots
MAX_DEPTH_WALK = 16


@dataclass(frozen=True)
class RowInfo:
    depth: int = 0
    kids: int = 0
    tree_cost: float = 0.0


@dataclass
class Branch:
    agent: Agent
    info: RowInfo
    children: list[Branch] = field(default_factory=list)


async def branches(deck: Deck, roots: list[Agent]) -> list[Branch]:
    below = await deck.descendants([a.id for a in roots], limit=MAX_BELOW)
    by_id: dict[str, Branch] = {}
    out: list[Branch] = []
    for row in tree_rows(roots, below):
        branch = Branch(row.agent, RowInfo(row.depth, row.children, row.tree_cost))
        by_id[row.agent.id] = branch
        parent = by_id.get(row.agent.parent_id or "") if row.depth else None
        (parent.children if parent is not None else out).append(branch)
    return out


async def row_info(deck: Deck, agent: Agent) -> RowInfo:
    depth, parent_id = 0, agent.parent_id
    while parent_id and depth < MAX_DEPTH_WALK:
        depth += 1
        try:
            parent_id = (await deck.get_agent(parent_id)).parent_id
        except NotFound:
            break
    below = await deck.descendants([agent.id], limit=MAX_BELOW)
    kids = sum(1 for a in below if a.parent_id == agent.id)
    return RowInfo(depth, kids, agent.cost_usd + sum(a.cost_usd for a in below))


async def ancestors(deck: Deck, agent: Agent) -> list[Agent]:
    out: list[Agent] = []
    parent_id = agent.parent_id
    while parent_id and len(out) < MAX_DEPTH_WALK:
        try:
            parent = await deck.get_agent(parent_id)
        except NotFound:
            break
        out.append(parent)
        parent_id = parent.parent_id
    return out


async def speaker_of(deck: Deck, agent: Agent) -> str:
    """Who the agent's user messages come from: its orchestrator, or you."""
    if not agent.parent_id:
        return "you"
    try:
        return (await deck.get_agent(agent.parent_id)).name
    except NotFound:
        return "its orchestrator"
