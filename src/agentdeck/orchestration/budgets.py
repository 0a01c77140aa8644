"""The agent trees' budgets as this process sees them (``core.tree.BudgetNode``).

One process alone on its database (SQLite) holds each tree's money in memory,
seeded from the store's ``cost_usd`` of the agent and its descendants when first
asked for, and charged with every cost increase of the agents it runs.

On a deck whose store may be shared by several processes (PostgreSQL: API nodes
and runner hosts), an orchestrator on host A and its children on host B would
each charge their own copy, and the tree could spend its budget once per host.
There the database is the figure and the nodes are its cache:

- **Charges**: an agent's cost is committed to its row before it is charged
  (``session_stream``), so after each charge the tree is read again from the
  store (the root's row and its descendants', one indexed query per level) and
  every cached node's spend and liveness replaced by the cluster's; an agent a
  read finds over a limit is stopped with the guardrail's own ``Stop`` (the one
  a charge would have reported), wherever the agent that pushed the tree over
  ran. An agent running here counts at least what its guard saw (a cost reported
  mid-turn is on its row only at the turn's end).
- **Reservations**: a spawn carves its child's budget under a deck-wide
  advisory lock named by the tree's root (``store.advisory``), after reading the
  tree again, and holds it until the child's row is written: two children
  spawned at once on two hosts never reserve the same money twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from agentdeck.core.agent import Agent, AgentSource
from agentdeck.core.guardrails import SharedBudget, Stop
from agentdeck.core.tree import BudgetNode, over_limit, subtree_spend, top_of
from agentdeck.errors import NotFound
from agentdeck.store import advisory

if TYPE_CHECKING:
    from agentdeck.runner.runner import Runner
    from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

LOCK_PREFIX = "agentdeck:tree-budget:"


class ClusterCharge:
    """An agent's place in its tree's budget on a shared deck: charged on the
    cache at once (as alone), then checked against the database."""

    def __init__(self, budgets: TreeBudgets, agent_id: str) -> None:
        self.budgets = budgets
        self.agent_id = agent_id

    def charge(self, delta_usd: float) -> Stop | None:
        node = self.budgets.nodes.get(self.agent_id)
        stop = node.charge(delta_usd) if node is not None else None
        if stop is None:
            self.budgets.check_later(self.agent_id)
        return stop


class TreeBudgets:
    def __init__(
        self, store: Store, runner: Runner, agent: Callable[[str], Awaitable[Agent]]
    ) -> None:
        self.store = store
        self.runner = runner
        self._agent = agent  # the orchestrator's lookup: NotFound for an unknown id
        self.nodes: dict[str, BudgetNode] = {}
        self.lock = asyncio.Lock()
        self.shared = advisory.conninfo(store) is not None
        self._checks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()

    async def node(self, agent: Agent) -> BudgetNode:
        async with self.lock:
            return await self._node(agent)

    async def for_session(self, agent: Agent) -> SharedBudget:
        """What a session charges: the node alone; on a shared deck, the node
        read again from the store and checked against it after each charge."""
        node = await self.node(agent)
        if not self.shared:
            return node
        await self.refresh(node)
        return ClusterCharge(self, agent.id)

    @contextlib.asynccontextmanager
    async def carving(self, parent: Agent) -> AsyncIterator[BudgetNode]:
        """The parent's node to carve a child's budget from, current; on a shared
        deck the tree's lock is held until the block (the child's row written) ends."""
        node = await self.node(parent)
        if not self.shared:
            yield node
            return
        async with advisory.held(self.store, LOCK_PREFIX + top_of(node).agent_id):
            await self.refresh(node)
            yield self.nodes.get(parent.id, node)

    async def given(self, child_id: str, budget: float | None, parent: BudgetNode) -> None:
        """The spawned child's node: it reserves ``budget`` from its parent's."""
        async with self.lock:
            if child_id not in self.nodes:  # its session may have asked already
                self.nodes[child_id] = BudgetNode(child_id, budget, parent=parent)

    def set_live(self, agent_id: str, live: bool) -> None:
        node = self.nodes.get(agent_id)
        if node is not None:
            node.live = live

    # -- the cluster's figure ---------------------------------------------------------

    async def refresh(self, node: BudgetNode) -> None:
        """Replace the spend and liveness of every cached node of ``node``'s tree
        with the store's (at least what this process's guards saw), and cache the
        children other processes spawned meanwhile (their reservations)."""
        top = top_of(node)
        try:
            root = await self.store.get_agent(top.agent_id)
        except NotFound:
            return
        below = await self.store.descendants([root.id])
        rows = [root, *below]
        costs = {a.id: max(a.cost_usd, self._seen_here(a.id)) for a in rows}
        spend = subtree_spend([(a.id, a.parent_id) for a in rows], costs)
        by_id = {a.id: a for a in rows}
        async with self.lock:
            for agent in rows:  # parents before children: level by level
                cached = self.nodes.get(agent.id)
                if cached is None:
                    parent = self.nodes.get(agent.parent_id or "")
                    if parent is None or parent.children.get(agent.id) is not None:
                        continue
                    cached = BudgetNode(agent.id, agent.spec.budget_usd, parent=parent)
                    self.nodes[agent.id] = cached
                cached.spent = spend[agent.id]
                cached.live = not by_id[agent.id].state.is_final  # a queued child reserves
            for cached in _tree(top):  # the children seeded under a node, uncached
                if cached.agent_id in by_id:
                    cached.spent = spend[cached.agent_id]
                    cached.live = not by_id[cached.agent_id].state.is_final

    def _seen_here(self, agent_id: str) -> float:
        session = self.runner.sessions.get(agent_id)
        guard = getattr(session, "guard", None)
        return float(guard.spent) if guard is not None else 0.0

    def check_later(self, agent_id: str) -> None:
        """Read the tree again after a charge; stop the agent if it is over."""
        running = self._checks.get(agent_id)
        if running is not None and not running.done():
            self._again.add(agent_id)  # one more read once this one is over
            return
        self._checks[agent_id] = asyncio.ensure_future(self._check(agent_id))

    async def _check(self, agent_id: str) -> None:
        try:
            while True:
                self._again.discard(agent_id)
                stop = await self.check(agent_id)
                if stop is not None:
                    await self._stop(agent_id, stop)
                    return
                if agent_id not in self._again:
                    return
        except Exception:  # a follow-up: logged, never raised into the loop
            logger.exception("checking %s's tree budget failed", agent_id)
        finally:
            self._checks.pop(agent_id, None)

    async def check(self, agent_id: str) -> Stop | None:
        """The tree read again from the store: a ``Stop`` if ``agent_id`` or one of
        its ancestors is over its limit."""
        node = self.nodes.get(agent_id)
        if node is None:
            return None
        await self.refresh(node)
        return over_limit(self.nodes.get(agent_id, node))

    async def _stop(self, agent_id: str, stop: Stop) -> None:
        session = self.runner.sessions.get(agent_id)
        if session is None or session.finished.is_set():
            return
        guard = session.guard
        if guard is not None and guard.stopped is None:
            guard.stopped = stop
        await session._trip(stop)  # the guardrail's own stop: its error, then the kill

    async def wait_checks(self) -> None:
        """Every pending check done (tests; a closing orchestrator)."""
        while self._checks:
            await asyncio.gather(*list(self._checks.values()), return_exceptions=True)

    def close(self) -> None:
        for task in list(self._checks.values()):
            task.cancel()

    # -- seeding from the store ---------------------------------------------------------

    async def _node(self, agent: Agent) -> BudgetNode:
        node = self.nodes.get(agent.id)
        if node is not None:
            return node
        parent_node = None
        if agent.parent_id:
            with contextlib.suppress(NotFound):
                parent_node = await self._node(await self._agent(agent.parent_id))
        limit = agent.spec.budget_usd
        if limit is None and agent.source is AgentSource.AGENTDECK:
            limit = self.runner.governor.profile_for(agent).budgets.max_usd
        below = await self.store.descendants([agent.id])
        spent = agent.cost_usd + sum(a.cost_usd for a in below)
        node = BudgetNode(
            agent.id, limit, spent=spent, parent=parent_node, live=agent.state.is_live
        )
        for child in (a for a in below if a.parent_id == agent.id):
            # Existing children reserve what they were given and did not spend.
            if child.id not in node.children:
                child_spent = child.cost_usd + sum(
                    a.cost_usd for a in below if _below(a, child.id, below)
                )
                BudgetNode(
                    child.id,
                    child.spec.budget_usd,
                    spent=child_spent,
                    parent=node,
                    live=child.state.is_live,
                )
        self.nodes[agent.id] = node
        return node


def _tree(top: BudgetNode) -> Iterator[BudgetNode]:
    stack = [top]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children.values())


def _below(agent: Agent, root: str, pool: Sequence[Agent]) -> bool:
    by_id = {a.id: a for a in pool}
    parent = agent.parent_id
    while parent is not None:
        if parent == root:
            return True
        parent = by_id[parent].parent_id if parent in by_id else None
    return False
