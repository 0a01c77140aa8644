"""Write statements, run by the writer thread inside its open transaction.

Portable SQLAlchemy Core; the surrounding ``BEGIN IMMEDIATE`` (see ``dialect``)
is what makes read-then-write sequences here atomic across processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.ports import Command
from agentdeck.store.dialect import insert_returning_ids
from agentdeck.store.rows import command_payload, row_to_command
from agentdeck.store.schema import agents, commands, events
from agentdeck.store.usage_rollup import roll_up


def insert_events(conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
    """Insert in one executemany; the database allocates the ids, returned in
    the order of ``rows`` (so a batch keeps its submission order). Costs are
    added to the hourly usage rollup in the same transaction."""
    ids = insert_returning_ids(conn, events, rows)
    roll_up(conn, rows)
    return ids


def upsert_agent(conn: Connection, row: dict[str, Any]) -> None:
    # UPDATE-then-INSERT is portable; the write lock rules out a racing insert.
    values = {k: v for k, v in row.items() if k != "id"}
    result = conn.execute(sa.update(agents).where(agents.c.id == row["id"]).values(values))
    if result.rowcount == 0:
        conn.execute(sa.insert(agents).values(row))


def set_archived(conn: Connection, agent_id: str, archived: bool) -> bool:
    """False when there is no such agent."""
    result = conn.execute(
        sa.update(agents).where(agents.c.id == agent_id).values(archived=archived)
    )
    return bool(result.rowcount)


def enqueue_command(
    conn: Connection, agent_id: str, kind: str, payload: dict[str, Any], now: float
) -> int:
    stmt = (
        sa.insert(commands)
        .values(
            agent_id=agent_id,
            kind=kind,
            payload=command_payload(agent_id, kind, payload),
            created_at=now,
        )
        .returning(commands.c.id)
    )
    return int(conn.execute(stmt).scalar_one())


def claim_commands(
    conn: Connection, agent_ids: Sequence[str], claimer: str, now: float
) -> list[Command]:
    """Mark every unclaimed command for ``agent_ids`` as claimed by ``claimer``
    and return them, oldest first. Each command is claimed exactly once."""
    if not agent_ids:
        return []
    pending = (
        sa.select(commands)
        .where(commands.c.agent_id.in_(list(agent_ids)), commands.c.claimed_at.is_(None))
        .order_by(commands.c.id)
        .with_for_update(skip_locked=True)  # ignored by SQLite, used by PostgreSQL
    )
    rows = [dict(r) for r in conn.execute(pending).mappings()]
    if not rows:
        return []
    conn.execute(
        sa.update(commands)
        .where(commands.c.id.in_([r["id"] for r in rows]), commands.c.claimed_at.is_(None))
        .values(claimed_at=now, claimed_by=claimer)
    )
    return [row_to_command({**r, "claimed_at": now, "claimed_by": claimer}) for r in rows]


def amend_extra(
    conn: Connection, agent_id: str, set_: dict[str, Any], append: dict[str, Any]
) -> bool:
    """Change keys of an agent's ``extra`` (and append to lists in it) in place,
    leaving the rest of the row as it is now. False when there is no such agent."""
    row = conn.execute(sa.select(agents.c.extra).where(agents.c.id == agent_id)).first()
    if row is None:
        return False
    extra = dict(row[0] or {})
    extra.update(set_)
    for key, value in append.items():
        extra[key] = [*extra.get(key, []), value]
    extra = {k: v for k, v in extra.items() if v is not None}
    conn.execute(sa.update(agents).where(agents.c.id == agent_id).values(extra=extra))
    return True
