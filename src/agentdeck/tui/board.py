"""The agent table's model: rows from the deck, kept current by events. Pure (no I/O).

A row starts as the deck's ``Agent`` and is moved along by the cheap facts an event
carries (state, current tool, cost); what only the daemon knows exactly (turns, the
cost total of a resumed agent, a new agent's name and parent) is fetched again for the
agents ``apply`` marks ``stale``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from agentdeck.core.agent import Agent
from agentdeck.core.events import StoredEvent

# Events after which the daemon's row says more than the event did.
_REFETCH = frozenset({"agent_spawned", "turn_completed", "state_changed"})


SortKey = Literal["name", "state", "cost"] | None
SORTS: tuple[SortKey, ...] = (None, "name", "state", "cost")  # what the sort key steps through
_SORTS: dict[str, Callable[[Row], Any]] = {
    "name": lambda r: (r.name.lower(), r.id),
    "state": lambda r: (r.state, -r.created_at),
    "cost": lambda r: (-r.cost_usd, -r.created_at),  # the dearest first
}


def host_of(agent: Agent) -> str:
    """The runner host in the agent's record (as ``agentdeck ls`` shows it), or ``""``."""
    host = agent.extra.get("host")
    return host if isinstance(host, str) else ""


@dataclass
class Row:
    id: str
    name: str
    state: str
    parent_id: str | None
    current_tool: str | None
    turns: int
    cost_usd: float
    created_at: float
    host: str = ""  # the runner host that runs (or ran) it; "" on a one-daemon deck

    @classmethod
    def of(cls, agent: Agent) -> Row:
        return cls(
            id=agent.id,
            name=agent.name,
            state=str(agent.state),
            parent_id=agent.parent_id,
            current_tool=agent.current_tool,
            turns=agent.turns,
            cost_usd=agent.cost_usd,
            created_at=agent.created_at,
            host=host_of(agent),
        )

    def matches(self, text: str) -> bool:
        text = text.lower()
        return text in self.name.lower() or self.id.startswith(text) or text in self.state


@dataclass
class Board:
    rows: dict[str, Row] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)

    def load(self, agents: Iterable[Agent]) -> None:
        """Replace every row with the deck's board (``Deck.tree``)."""
        self.rows = {}
        self.upsert(agents)

    def upsert(self, agents: Iterable[Agent]) -> None:
        for agent in agents:
            row = Row.of(agent)
            self.rows[row.id] = row
            self.stale.discard(row.id)

    def apply(self, event: StoredEvent) -> str | None:
        """Move a row along with an event; the id of the row that changed, if any."""
        agent_id, kind, data = event.agent_id, event.type, event.data
        row = self.rows.get(agent_id)
        if kind in _REFETCH:
            self.stale.add(agent_id)
        if row is None:
            if kind == "agent_spawned":
                row = Row(
                    id=agent_id,
                    name=str(data.get("name") or agent_id),
                    state="starting",
                    parent_id=data.get("parent_id"),
                    current_tool=None,
                    turns=0,
                    cost_usd=0.0,
                    created_at=event.ts,
                )
                self.rows[agent_id] = row
                return agent_id
            return None
        if kind == "state_changed":
            row.state = str(data.get("new") or row.state)
        elif kind == "tool_called":
            row.current_tool = data.get("tool")
        elif kind in ("tool_returned", "turn_completed"):
            row.current_tool = None
        elif kind == "cost_updated":
            # The event has the process's total; the row (a resumed agent) may have more.
            row.cost_usd = max(row.cost_usd, float(data.get("cost_usd") or 0.0))
        else:
            return None
        return agent_id

    def ordered(self, text: str = "", sort: SortKey = None) -> Iterator[tuple[Row, int]]:
        """Rows in tree order, each with its depth: children under their parent;
        siblings by ``sort`` (by default roots newest first, children oldest first);
        with ``text``, the rows that match it and their ancestors."""
        children: dict[str | None, list[Row]] = {}
        for row in self.rows.values():
            parent = row.parent_id if row.parent_id in self.rows else None
            children.setdefault(parent, []).append(row)
        keep: set[str] | None = None
        if text:
            keep = set()
            for row in self.rows.values():
                if row.matches(text):
                    current: Row | None = row
                    while current is not None and current.id not in keep:
                        keep.add(current.id)
                        current = self.rows.get(current.parent_id or "")

        def walk(parent: str | None, depth: int) -> Iterator[tuple[Row, int]]:
            kids = children.get(parent, [])
            if sort is None:
                kids = sorted(kids, key=lambda r: r.created_at, reverse=parent is None)
            else:
                kids = sorted(kids, key=_SORTS[sort])
            for row in kids:
                if keep is None or row.id in keep:
                    yield row, depth
                    yield from walk(row.id, depth + 1)

        yield from walk(None, 0)


def age(created_at: float, now: float | None = None) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    seconds = max(0, int((time.time() if now is None else now) - created_at))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
