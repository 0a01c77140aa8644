"""The hourly usage rollup (``usage_hours``, migration 0006), kept by the writer.

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
    for (agent_id, hour), (cost, tokens_in, tokens_out, results) in sums.items():
        c = usage_hours.c
        # UPDATE-then-INSERT is portable; the write lock rules out a racing insert.
        updated = conn.execute(
            sa.update(usage_hours)
            .where(c.agent_id == agent_id, c.hour == hour)
            .values(
                cost_usd=c.cost_usd + cost,
                input_tokens=c.input_tokens + tokens_in,
                output_tokens=c.output_tokens + tokens_out,
                results=c.results + results,
            )
        )
        if updated.rowcount == 0:
            conn.execute(
                sa.insert(usage_hours).values(
                    agent_id=agent_id,
                    hour=hour,
                    cost_usd=cost,
                    input_tokens=tokens_in,
                    output_tokens=tokens_out,
                    results=results,
                )
            )
