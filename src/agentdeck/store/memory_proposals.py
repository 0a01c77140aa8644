"""Memories the agents write, in the store (migration 0013; ``core.memory_proposals``).

Writes go through the store's one write path; the flood cap (pending proposals
per agent) is counted in the same transaction as the insert, so two calls at
once cannot both slip under it. A decision is taken only from the state it
was read in (``InvalidState`` otherwise: someone else decided first).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.memory_proposals import (
    LIST_MAX,
    MemoryProposal,
    ProposalState,
)
from agentdeck.errors import InvalidState, NotFound, Refused
from agentdeck.store.schema import memory_proposals as table
from agentdeck.store.store import Store

NOUN = "memory"


class ProposalStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(self, proposal: MemoryProposal, *, pending_cap: int) -> MemoryProposal:
        """Keep a new proposal; ``Refused`` when its agent already has
        ``pending_cap`` waiting (an accepted one at once counts for nothing)."""

        def op(conn: Connection) -> None:
            if proposal.state is ProposalState.PENDING:
                waiting = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(table)
                    .where(table.c.agent_id == proposal.agent_id)
                    .where(table.c.state == str(ProposalState.PENDING))
                ).scalar_one()
                if waiting >= pending_cap:
                    raise Refused(
                        f"you already have {waiting} memories waiting for review (at most "
                        f"{pending_cap}); nothing was kept",
                        hint="wait until a person has reviewed them",
                    )
            conn.execute(sa.insert(table).values(_row(proposal)))

        await self.store._write(op)
        return proposal

    async def get(self, proposal_id: str) -> MemoryProposal:
        def query(conn: Connection) -> MemoryProposal | None:
            row = conn.execute(sa.select(table).where(table.c.id == proposal_id)).first()
            return None if row is None else _record(row._mapping)

        found = await self.store._read(query)
        if found is None:
            raise NotFound(NOUN, proposal_id, hint="ids come from `agentdeck memories pending`")
        return found

    async def listed(
        self, state: ProposalState | None, *, limit: int = LIST_MAX
    ) -> list[MemoryProposal]:
        """Newest first; ``state`` None: every state."""

        def query(conn: Connection) -> list[MemoryProposal]:
            stmt = sa.select(table)
            if state is not None:
                stmt = stmt.where(table.c.state == str(state))
            stmt = stmt.order_by(table.c.created_at.desc(), table.c.id).limit(limit)
            return [_record(r._mapping) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def accepted(self, template: str, project: str, *, limit: int) -> list[MemoryProposal]:
        """The accepted memories of ``template`` in ``project``, newest first."""

        def query(conn: Connection) -> list[MemoryProposal]:
            stmt = (
                sa.select(table)
                .where(table.c.template == template)
                .where(table.c.project == project)
                .where(table.c.state == str(ProposalState.ACCEPTED))
                .order_by(table.c.created_at.desc(), table.c.id)
                .limit(limit)
            )
            return [_record(r._mapping) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def update(
        self, proposal: MemoryProposal, *, was: tuple[ProposalState, ...], operation: str
    ) -> MemoryProposal:
        """Write ``proposal`` over its row if the row is still in one of ``was``."""

        def op(conn: Connection) -> None:
            done = conn.execute(
                sa.update(table)
                .where(table.c.id == proposal.id)
                .where(table.c.state.in_([str(s) for s in was]))
                .values(_row(proposal))
            ).rowcount
            if done == 0:
                row = conn.execute(
                    sa.select(table.c.state).where(table.c.id == proposal.id)
                ).first()
                if row is None:
                    raise NotFound(NOUN, proposal.id)
                raise InvalidState(proposal.id, str(row.state), operation, noun=NOUN)

        await self.store._write(op)
        return proposal


def _row(proposal: MemoryProposal) -> dict[str, Any]:
    row = proposal.to_dict()
    row["state"] = str(proposal.state)
    return row


def _record(m: Any) -> MemoryProposal:
    return MemoryProposal(
        id=m["id"],
        agent_id=m["agent_id"],
        template=m["template"],
        project=m["project"],
        kind=m["kind"],
        text=m["text"],
        state=ProposalState(m["state"]),
        created_at=m["created_at"],
        decided_at=m["decided_at"],
        decided_by=m["decided_by"],
        edited=bool(m["edited"]),
    )
