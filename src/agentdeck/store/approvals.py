"""Approval requests and grants in the store (the ``approvals`` and ``grants``
tables of migration 0002). Writes go through the store's one write path; an
answer is conditional on the request still being pending, so two people (or a
person and the timeout) can never both decide it.

Grants are read on every tool call, so they are kept in memory, current across
processes: a process that adds a grant writes a fresh token to the stamp file
beside the database once it is committed (``<db>.grants``); a reader reads the
token (one small file read) and reads the table again when it changed, or when
its copy is older than ``GRANTS_MAX_AGE`` (a writer that died between its
commit and its stamp). Grants are only ever added.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.approvals import Approval, ApprovalState, GrantRecord, GrantScope
from agentdeck.core.redact import scrub
from agentdeck.errors import NotFound
from agentdeck.files import atomic_write
from agentdeck.store.lookup import by_id_or_prefix
from agentdeck.store.rows import SAID as TABLE_SAID
from agentdeck.store.rows import said_scrubbed
from agentdeck.store.schema import approvals, grants
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

SAID = TABLE_SAID["approvals"]  # what a request and its answer say: scrubbed
MAX_HELD = 10_000  # agents whose grants are held at once
GRANTS_MAX_AGE = 2.0  # seconds a copy of the grants is trusted without its stamp changing


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
        # A file next to the database tells every process on it that the grants
        # changed. PostgreSQL has no such file (its processes may be on several
        # hosts): there a copy lives GRANTS_MAX_AGE at most.
        self._stamp = Path(f"{store.db_path}.grants") if store.has_file else None
        # (grant_key, agent_id) -> (the stamp's token when read, when, the grants)
        self._grants: dict[tuple[str, str], tuple[str | None, float, list[GrantRecord]]] = {}

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
        if changed and remember is not None and grant_rule is not None:
            self._stamp_grants()
        return await self.get(approval_id) if changed else None

    def _stamp_grants(self) -> None:
        """A fresh token in the stamp file, replaced whole: every process's copy
        of the grants is read again."""
        self._grants.clear()
        if self._stamp is None:
            return
        try:
            atomic_write(self._stamp, secrets.token_hex(16), mode=0o600)
        except OSError as exc:  # other processes read again within GRANTS_MAX_AGE
            logger.warning("could not write %s: %s", self._stamp, exc)

    def _stamp_token(self) -> str | None:
        """The stamp's token: ``None`` if no grant was ever stamped, a token no copy
        holds if it cannot be read (then every call reads the table)."""
        if self._stamp is None:
            return None
        try:
            return self._stamp.read_text()
        except FileNotFoundError:
            return None
        except OSError:
            return f"unreadable {secrets.token_hex(8)}"

    async def grants_for(self, grant_key: str, agent_id: str) -> list[GrantRecord]:
        """Persistent grants of the key, and this agent's session grants (from
        memory while no process has added one)."""
        token, now = self._stamp_token(), time.monotonic()
        held = self._grants.get((grant_key, agent_id))
        if held is not None and held[0] == token and now - held[1] < GRANTS_MAX_AGE:
            return list(held[2])

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

        found = await self.store._read(query)  # the token was read first: never newer
        if len(self._grants) >= MAX_HELD:
            self._grants.clear()
        self._grants[(grant_key, agent_id)] = (token, now, found)
        return list(found)
