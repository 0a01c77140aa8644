"""The hourly usage rollup (``usage_hours``, migration 0008), kept by the writer.

Each ``cost_updated`` event adds its turn's cost (``delta_usd``), tokens and one
result to its agent's row for that UTC hour, in the transaction that appends
the event: the rollup never disagrees with the log. The usage query then reads
at most (agents times hours) rows, however long the log (``benchmarks/usage.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.event_types import EventType
from agentdeck.store.schema import usage_hours

_COST = str(EventType.COST_UPDATED)
HOUR = 3600


def roll_up(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Add the ``cost_updated`` rows among ``rows`` (event rows) to the rollup.
    Call inside the write transaction that inserts them."""
    sums: dict[tuple[str, float], list[float]] = {}
    for row in rows:
        if row["type"] != _COST:
            continue
        data = row["data"]
        key = (row["agent_id"], float(math.floor(row["ts"] / HOUR) * HOUR))
        acc = sums.setdefault(key, [0.0, 0, 0, 0])
        acc[0] += max(0.0, float(data.get("delta_usd") or 0.0))
        acc[1] += int(data.get("input_tokens") or 0)
        acc[2] += int(data.get("output_tokens") or 0)
        acc[3] += 1
    if not sums:
        return
    c = usage_hours.c
    # Which rows exist already (a superset query, filtered here): those are added
    # to, the others inserted, each in one executemany. The write lock rules out
    # a racing insert.
    found = conn.execute(
        sa.select(c.agent_id, c.hour).where(
            c.agent_id.in_({a for a, _ in sums}), c.hour.in_({h for _, h in sums})
        )
    )
    existing = {(str(a), float(h)) for a, h in found} & set(sums)
    params = [
        {"a": a, "h": h, "cost": v[0], "tin": v[1], "tout": v[2], "n": v[3]}
        for (a, h), v in sums.items()
    ]
    updates = [p for p in params if (p["a"], p["h"]) in existing]
    inserts = [p for p in params if (p["a"], p["h"]) not in existing]
    if updates:
        conn.execute(
            sa.update(usage_hours)
            .where(c.agent_id == sa.bindparam("a"), c.hour == sa.bindparam("h"))
            .values(
                cost_usd=c.cost_usd + sa.bindparam("cost"),
                input_tokens=c.input_tokens + sa.bindparam("tin"),
                output_tokens=c.output_tokens + sa.bindparam("tout"),
                results=c.results + sa.bindparam("n"),
            ),
            updates,
        )
    if inserts:
        conn.execute(
            sa.insert(usage_hours).values(
                agent_id=sa.bindparam("a"),
                hour=sa.bindparam("h"),
                cost_usd=sa.bindparam("cost"),
                input_tokens=sa.bindparam("tin"),
                output_tokens=sa.bindparam("tout"),
                results=sa.bindparam("n"),
            ),
            inserts,
        )
