"""Read queries. Plain functions of a connection from the read pool."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import StoredEvent
from agentdeck.core.ports import Command
from agentdeck.store.rows import row_to_agent, row_to_command, row_to_event
from agentdeck.store.schema import agents, commands, events

_NEWEST_FIRST = (agents.c.created_at.desc(), agents.c.id.desc())


@dataclass(frozen=True)
class StoreStats:
    agents: int = 0
    agents_by_state: dict[str, int] = field(default_factory=dict)
    archived: int = 0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    last_event_id: int = 0
    pending_commands: int = 0
    roots: int = 0  # non-archived agents without a parent (the tree's top level)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def get_agent(conn: Connection, agent_id: str) -> Agent | None:
    row = conn.execute(sa.select(agents).where(agents.c.id == agent_id)).mappings().first()
    return row_to_agent(row) if row is not None else None


def agents_with_id_prefix(conn: Connection, prefix: str, limit: int = 10) -> list[Agent]:
    stmt = (
        sa.select(agents)
        .where(agents.c.id.like(_like_escape(prefix) + "%", escape="\\"))
        .order_by(*_NEWEST_FIRST)
        .limit(limit)
    )
    return [row_to_agent(r) for r in conn.execute(stmt).mappings()]


def agent_for_session(conn: Connection, session_id: str, source: str) -> Agent | None:
    stmt = (
        sa.select(agents)
        .where(agents.c.session_id == session_id, agents.c.source == source)
        .order_by(*_NEWEST_FIRST)
        .limit(1)
    )
    row = conn.execute(stmt).mappings().first()
    return row_to_agent(row) if row is not None else None


def agents_named(conn: Connection, name: str, limit: int = 10) -> list[Agent]:
    stmt = sa.select(agents).where(agents.c.name == name).order_by(*_NEWEST_FIRST).limit(limit)
    return [row_to_agent(r) for r in conn.execute(stmt).mappings()]


def list_agents(
    conn: Connection,
    *,
    states: Sequence[AgentState] | None,
    text: str | None,
    include_archived: bool,
    limit: int,
    offset: int,
    parent: str | None = None,
    roots: bool = False,
) -> list[Agent]:
    stmt = sa.select(agents)
    if parent is not None:
        stmt = stmt.where(agents.c.parent_id == parent)
    elif roots:
        stmt = stmt.where(agents.c.parent_id.is_(None))
    if states is not None:
        stmt = stmt.where(agents.c.state.in_([str(s) for s in states]))
    if not include_archived:
        stmt = stmt.where(agents.c.archived.is_(sa.false()))
    if text:
        pattern = "%" + _like_escape(text) + "%"
        stmt = stmt.where(
            sa.or_(
                agents.c.name.like(pattern, escape="\\"),
                agents.c.id.like(pattern, escape="\\"),
                agents.c.cwd.like(pattern, escape="\\"),
                sa.cast(agents.c.spec, sa.Text).like(pattern, escape="\\"),
            )
        )
    stmt = stmt.order_by(*_NEWEST_FIRST).limit(limit).offset(offset)
    return [row_to_agent(r) for r in conn.execute(stmt).mappings()]


def children_of(conn: Connection, parent_ids: Sequence[str], limit: int) -> list[Agent]:
    """The agents whose parent is one of ``parent_ids``, oldest first."""
    if not parent_ids:
        return []
    stmt = (
        sa.select(agents)
        .where(agents.c.parent_id.in_(list(parent_ids)))
        .order_by(agents.c.created_at, agents.c.id)
        .limit(limit)
    )
    return [row_to_agent(r) for r in conn.execute(stmt).mappings()]


def descendants(conn: Connection, root_ids: Sequence[str], limit: int) -> list[Agent]:
    """Every agent below ``root_ids``, level by level (each level oldest first),
    at most ``limit``: one indexed query per level of the tree."""
    found: list[Agent] = []
    level = list(root_ids)
    seen = set(level)
    while level and len(found) < limit:
        below = [a for a in children_of(conn, level, limit - len(found)) if a.id not in seen]
        seen.update(a.id for a in below)
        found += below
        level = [a.id for a in below]
    return found


def read_events(
    conn: Connection,
    *,
    after: int,
    agent_id: str | None,
    types: Sequence[str] | None,
    limit: int,
) -> list[StoredEvent]:
    stmt = sa.select(events).where(events.c.id > after)
    if agent_id is not None:
        stmt = stmt.where(events.c.agent_id == agent_id)
    if types is not None:
        stmt = stmt.where(events.c.type.in_([str(t) for t in types]))
    stmt = stmt.order_by(events.c.id).limit(limit)
    return [row_to_event(r) for r in conn.execute(stmt).mappings()]


def read_tail(
    conn: Connection, *, agent_id: str | None, before: int | None, limit: int
) -> list[StoredEvent]:
    """The last ``limit`` events (of one agent, if given) with ``id < before``,
    ascending. Walks ``ix_events_agent_id_id`` (or the primary key) backwards."""
    stmt = sa.select(events)
    if agent_id is not None:
        stmt = stmt.where(events.c.agent_id == agent_id)
    if before is not None:
        stmt = stmt.where(events.c.id < before)
    stmt = stmt.order_by(events.c.id.desc()).limit(limit)
    rows = [row_to_event(r) for r in conn.execute(stmt).mappings()]
    rows.reverse()
    return rows


def last_event_id(conn: Connection) -> int:
    return int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(events.c.id), 0))).scalar_one())


def get_command(conn: Connection, command_id: int) -> Command | None:
    row = conn.execute(sa.select(commands).where(commands.c.id == command_id)).mappings().first()
    return row_to_command(row) if row is not None else None


def list_commands(conn: Connection, agent_id: str) -> list[Command]:
    stmt = sa.select(commands).where(commands.c.agent_id == agent_id).order_by(commands.c.id)
    return [row_to_command(r) for r in conn.execute(stmt).mappings()]


def stats(conn: Connection) -> StoreStats:
    by_state = {
        str(state): int(count)
        for state, count in conn.execute(
            sa.select(agents.c.state, sa.func.count())
            .where(agents.c.archived.is_(sa.false()))
            .group_by(agents.c.state)
        )
    }
    totals = conn.execute(
        sa.select(
            sa.func.count(),
            sa.func.coalesce(sa.func.sum(sa.case((agents.c.archived, 1), else_=0)), 0),
            sa.func.coalesce(sa.func.sum(agents.c.cost_usd), 0.0),
            sa.func.coalesce(sa.func.sum(agents.c.input_tokens), 0),
            sa.func.coalesce(sa.func.sum(agents.c.output_tokens), 0),
            sa.func.coalesce(sa.func.sum(agents.c.turns), 0),
        )
    ).one()
    pending = conn.execute(
        sa.select(sa.func.count()).select_from(commands).where(commands.c.claimed_at.is_(None))
    ).scalar_one()
    roots = conn.execute(
        sa.select(sa.func.count())
        .select_from(agents)
        .where(agents.c.parent_id.is_(None), agents.c.archived.is_(sa.false()))
    ).scalar_one()
    return StoreStats(
        agents=int(totals[0]),
        agents_by_state=by_state,
        archived=int(totals[1]),
        cost_usd=float(totals[2]),
        input_tokens=int(totals[3]),
        output_tokens=int(totals[4]),
        turns=int(totals[5]),
        last_event_id=last_event_id(conn),
        pending_commands=int(pending),
        roots=int(roots),
    )
