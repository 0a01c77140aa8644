"""What the writer thread is given to write (``WorkItem``), what it answers
(``WorkResult``), and how a write that did not land is named in the log."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from agentdeck.core.events import StoredEvent

Operation = Callable[[Connection], Any]


@dataclass(frozen=True)
class WorkResult:
    events: list[StoredEvent]
    value: Any = None


@dataclass(eq=False)
class WorkItem:
    event_rows: Sequence[dict[str, Any]] = ()
    agent_rows: Sequence[dict[str, Any]] = ()
    op: Operation | None = None
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[WorkResult] | None = field(default=None, repr=False)
    essential: bool = False  # may use the reserve when the disk is full

    @property
    def weight(self) -> int:
        return max(1, len(self.event_rows))


def describe(items: Sequence[WorkItem]) -> str:
    """What these items would have written, for the log: events counted by agent
    and type, agent rows by id and state, other writes by name. No text of theirs
    (a row's text is scrubbed, but a log is no place for an agent's output)."""
    parts: list[str] = []
    events: dict[str, Counter[str]] = {}
    for item in items:
        for row in item.event_rows:
            events.setdefault(str(row.get("agent_id")), Counter())[str(row.get("type"))] += 1
    for agent_id, types in events.items():
        kinds = ", ".join(f"{t} x{n}" if n > 1 else t for t, n in types.items())
        parts.append(f"{sum(types.values())} event(s) of agent {agent_id} ({kinds})")
    for item in items:
        for row in item.agent_rows:
            parts.append(f"agent {row.get('id')}'s row (state {row.get('state')})")
    ops = Counter(_op_name(item.op) for item in items if item.op is not None)
    parts += [f"{n} x {name}" if n > 1 else name for name, n in ops.items()]
    return "; ".join(parts) or "nothing"


def _op_name(op: Operation) -> str:
    func = getattr(op, "func", op)  # functools.partial
    return str(getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or op)
