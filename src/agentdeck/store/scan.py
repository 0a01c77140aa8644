"""A lean read of the event log for a pass over all of it (``policy replay``):
plain rows, the data left as JSON text for the caller to decode (or skip), and
for some types only the one field a caller needs of it. Portable SQLAlchemy Core.

``read_events`` filters by type with the ``(type, ts)`` index and sorts what it
found by id: right for a page of a few types, but each page of a pass over a
long log then costs the whole log (209,000 events: 6.6 s in pages of 2,000).
Here the type is tested row by row along the primary key (``type || ''`` keeps
the planner off the type index, on SQLite and PostgreSQL alike), so a page costs
its own rows; with an agent, its ``(agent_id, id)`` index is walked instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.store.schema import events


class EventRow(NamedTuple):
    """An event as the log holds it, undecoded: ``data`` is its JSON text, or None
    for a type read ``brief``; then ``field`` is the one value kept of it, as text."""

    id: int
    agent_id: str
    type: str
    ts: float
    data: str | None
    field: str | None = None


def scan_events(
    conn: Connection,
    *,
    after: int,
    upto: int | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    brief: Mapping[str, str],
    limit: int,
) -> list[EventRow]:
    """Events with ``after < id <= upto`` (any above ``after`` when ``upto`` is
    None), of ``agent_id`` and ``types`` when given, ascending id, at most
    ``limit``. A type in ``brief`` is read as the one field it names there."""
    stmt = scan_query(after=after, upto=upto, agent_id=agent_id, types=types, brief=brief)
    return [EventRow._make(row) for row in conn.execute(stmt.limit(limit)).all()]


def scan_query(
    *,
    after: int,
    upto: int | None,
    agent_id: str | None,
    types: Sequence[str] | None,
    brief: Mapping[str, str],
) -> sa.Select[Any]:
    """``scan_events``' query, without its limit."""
    skipped = [str(t) for t in brief]
    data: sa.ColumnElement[Any] = sa.cast(events.c.data, sa.Text)
    if skipped:
        data = sa.case((events.c.type.in_(skipped), sa.null()), else_=data)
    field: sa.ColumnElement[Any] = sa.null()
    if brief:
        whens = [(events.c.type == str(t), events.c.data[k].as_string()) for t, k in brief.items()]
        field = sa.case(*whens)
    stmt = sa.select(events.c.id, events.c.agent_id, events.c.type, events.c.ts, data, field)
    stmt = stmt.where(events.c.id > after)
    if upto is not None:
        stmt = stmt.where(events.c.id <= upto)
    if agent_id is not None:
        stmt = stmt.where(events.c.agent_id == agent_id)
    if types is not None:
        stmt = stmt.where(events.c.type.concat("").in_([str(t) for t in types]))
    return stmt.order_by(events.c.id)
