"""Approval requests and grants in the store (the ``approvals`` and ``grants``
tables of migration 0002). Writes go through the store's one write path; an
answer is conditional on the request still being pending, so two people (or a
person and the timeout) can never both decide it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.approvals import Approval, ApprovalState, GrantRecord, GrantScope
from agentdeck.core.redact import scrub
from agentdeck.errors import NotFound
from agentdeck.store.lookup import by_id_or_prefix
from agentdeck.store.rows import SAID as TABLE_SAID
from agentdeck.store.rows import said_scrubbed
from agentdeck.store.schema import approvals, grants
from agentdeck.store.store import Store

SAID = TABLE_SAID["approvals"]  # what a request and its answer say: scrubbed


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    return said_scrubbed("approvals", data)


def _to_approval(row: Any) -> Approval:
    m = _scrubbed(dict(row._mapping))
    return Approval(
        id=m["id"],
        agent_id=m["agent_id"],
        tool=m["tool"],
        input=dict(m["input"] or {}),
        reason=m["reason"],
        grant_key=m["grant_key"],
        state=ApprovalState(m["state"]),
        created_at=m["created_at"],
        expires_at=m["expires_at"],
        tool_use_id=m["tool_use_id"],
        rule=m["rule"],
        answered_at=m["answered_at"],
        answered_by=m["answered_by"],
        message=m["message"],
        remember=m["remember"],
    )


def _to_grant(row: Any) -> GrantRecord:
    m = row._mapping
    return GrantRecord(
        grant_key=m["grant_key"],
        rule=m["rule"],
        decision=m["decision"],
        scope=GrantScope(m["scope"]),
        agent_id=m["agent_id"],
        created_at=m["created_at"],
        created_by=m["created_by"],
    )


class ApprovalStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(self, approval: Approval) -> Approval:
        row = _scrubbed(approval.to_dict())
        row["state"] = str(approval.state)

        def op(conn: Connection) -> None:
            conn.execute(sa.insert(approvals).values(row))

        await self.store._write(op)
        return approval

    async def get(self, approval_id: str) -> Approval:
        def query(conn: Connection) -> Approval | None:
            row = conn.execute(sa.select(approvals).where(approvals.c.id == approval_id)).first()
            return None if row is None else _to_approval(row)

        found = await self.store._read(query)
        if found is None:
            raise NotFound(
                "approval request", approval_id, hint="`agentdeck approvals` lists the pending ones"
            )
        return found

    async def find(self, ref: str) -> Approval:
        """By id, or a unique id prefix of at least 4 characters."""
        return await by_id_or_prefix(self.store, approvals, ref, _to_approval, self.get)

    async def list_approvals(
        self,
        *,
        states: Sequence[ApprovalState] | None = (ApprovalState.PENDING,),
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        def query(conn: Connection) -> list[Approval]:
            stmt = sa.select(approvals).order_by(approvals.c.created_at.desc()).limit(limit)
            if states:
                stmt = stmt.where(approvals.c.state.in_([str(s) for s in states]))
            if agent_id is not None:
                stmt = stmt.where(approvals.c.agent_id == agent_id)
            return [_to_approval(r) for r in conn.execute(stmt)]

        return await self.store._read(query)

    async def decide(
        self,
        approval_id: str,
        state: ApprovalState,
        *,
        by: str,
        message: str | None = None,
        remember: GrantScope | None = None,
        grant_rule: str | None = None,
    ) -> Approval | None:
        """Answer a pending request (and remember a grant) in one transaction.

        Returns the answered request, or None if it was no longer pending.
        """
        now = time.time()

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(approvals)
                .where(approvals.c.id == approval_id, approvals.c.state == "pending")
                .values(
                    state=str(state),
                    answered_at=now,
                    answered_by=by,
                    message=None if message is None else scrub(message),
                    remember=str(remember) if remember else None,
                )
            )
            if not result.rowcount:
                return False
            if remember is not None and grant_rule is not None:
                row = conn.execute(
                    sa.select(approvals.c.grant_key, approvals.c.agent_id).where(
                        approvals.c.id == approval_id
                    )
                ).one()
                conn.execute(
                    sa.insert(grants).values(
                        grant_key=row.grant_key,
                        rule=grant_rule,
                        decision="allow" if state == ApprovalState.ALLOWED else "deny",
                        scope=str(remember),
                        agent_id=row.agent_id if remember == GrantScope.SESSION else None,
                        created_at=now,
                        created_by=by,
                    )
                )
            return True

        changed = await self.store._write(op)
        return await self.get(approval_id) if changed else None

    async def grants_for(self, grant_key: str, agent_id: str) -> list[GrantRecord]:
        """Persistent grants of the key, and this agent's session grants."""

        def query(conn: Connection) -> list[GrantRecord]:
            stmt = (
                sa.select(grants)
                .where(
                    grants.c.grant_key == grant_key,
                    sa.or_(grants.c.scope == "persistent", grants.c.agent_id == agent_id),
                )
                .order_by(grants.c.id)
            )
            return [_to_grant(r) for r in conn.execute(stmt)]

        return await self.store._read(query)
