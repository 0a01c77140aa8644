"""Agents queued for a runner host (a deck with runner hosts, issue 30 item 3).

A queued agent waits in the ``agents`` table in state ``queued`` until a host
that fits claims it (``HostStore.claim(..., queued_only=True)``: a lease, in the
same write lock). Ending a queued agent before any host took it (a kill, a
failure to place it) is ``end_queued``: a conditional change under the write
lock, so that it and a claim never both win.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.agent import Agent, AgentState
from agentdeck.store.hosts import db_now
from agentdeck.store.rows import row_to_agent
from agentdeck.store.schema import agents, leases
from agentdeck.store.store import Store

QUEUED = str(AgentState.QUEUED)


async def queued_agents(store: Store, limit: int = 100) -> list[Agent]:
    """The queued agents no host holds a lease on, oldest first."""

    def query(conn: Connection) -> list[Agent]:
        now = db_now(conn)
        held = sa.select(leases.c.agent_id).where(
            leases.c.released_at.is_(None), leases.c.expires_at > now
        )
        stmt = (
            sa.select(agents)
            .where(agents.c.state == QUEUED, agents.c.archived.is_(sa.false()))
            .where(agents.c.id.not_in(held))
            .order_by(agents.c.created_at, agents.c.id)
            .limit(limit)
        )
        return [row_to_agent(r._mapping) for r in conn.execute(stmt)]

    return await store._read(query)


async def end_queued(store: Store, agent_id: str, state: AgentState) -> bool:
    """Move a queued agent that no host holds to ``state`` (killed, error) in the
    agents table; False when it is no longer queued or a host claimed it (the
    caller then steers it where it runs). The caller records the events and the
    row after it (``Store.record``)."""

    def op(conn: Connection) -> bool:
        now = db_now(conn)
        held = sa.select(leases.c.agent_id).where(
            leases.c.agent_id == agent_id,
            leases.c.released_at.is_(None),
            leases.c.expires_at > now,
        )
        done = conn.execute(
            sa.update(agents)
            .where(agents.c.id == agent_id, agents.c.state == QUEUED, ~sa.exists(held))
            .values(state=str(state))
        )
        return bool(done.rowcount)

    ended: bool = await store._write(op)
    return ended


async def hosted_live(store: Store, host: str) -> list[Agent]:
    """The agents the table has as live (or queued for a resume) under ``host``:
    what a host that starts again finds of its earlier life."""

    def query(conn: Connection) -> list[Agent]:
        live = [str(s) for s in AgentState if s.is_live]
        stmt = sa.select(agents).where(agents.c.state.in_(live)).order_by(agents.c.created_at)
        found = [row_to_agent(r._mapping) for r in conn.execute(stmt)]
        return [a for a in found if a.extra.get("host") == host]

    return await store._read(query)


async def live_count(store: Store) -> int:
    """Agents live on the whole deck (every host's): the fleet's limit counts them."""

    def query(conn: Connection) -> int:
        live = [str(s) for s in AgentState if s.is_live]
        stmt = sa.select(sa.func.count()).select_from(agents).where(agents.c.state.in_(live))
        return int(conn.execute(stmt).scalar_one())

    return await store._read(query)
