"""The audit table (hash-chained decisions) and the spend query.

``append_entry`` runs on the writer thread inside its ``BEGIN IMMEDIATE``
transaction: reading the head and inserting the next entry happen under one
write lock, so two processes (or two ``Store``s) can never both chain onto the
same head. The reads are plain functions of a read-pool connection.

What an entry says (its reason, its rule: a remembered rule can be a whole
command) is scrubbed like the event log before it is sealed, so the hash covers
the scrubbed text and the chain verifies; the input is kept only as its digest.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.audit import GENESIS, AuditEntry, AuditRecord, seal
from agentdeck.core.events import EventType
from agentdeck.core.redact import scrub
from agentdeck.store.schema import audit, events


def entry_to_row(entry: AuditEntry) -> dict[str, Any]:
    row = entry.to_dict()
    return {c.name: row[c.name] for c in audit.c}


def row_to_entry(row: Mapping[Any, Any]) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        ts=row["ts"],
        agent_id=row["agent_id"],
        tool=row["tool"],
        input_digest=row["input_digest"],
        decision=row["decision"],
        rule=row["rule"],
        reason=row["reason"],
        answered_by=row["answered_by"],
        prev_hash=row["prev_hash"],
        hash=row["hash"],
    )


def scrubbed(record: AuditRecord) -> AuditRecord:
    """``record`` with what it says scrubbed (the same object if nothing changed)."""
    reason, rule = scrub(record.reason), None if record.rule is None else scrub(record.rule)
    if reason == record.reason and rule == record.rule:
        return record
    return dataclasses.replace(record, reason=reason, rule=rule)


def append_entry(conn: Connection, record: AuditRecord) -> AuditEntry:
    """Chain ``record``, scrubbed, onto the current head. Call inside the write
    transaction."""
    record = scrubbed(record)
    head = conn.execute(
        sa.select(audit.c.id, audit.c.hash).order_by(audit.c.id.desc()).limit(1)
    ).first()
    last_id, prev_hash = (int(head[0]), str(head[1])) if head is not None else (0, GENESIS)
    entry = seal(prev_hash, last_id + 1, record)
    conn.execute(sa.insert(audit).values(entry_to_row(entry)))
    return entry


def read_entries(
    conn: Connection, *, after: int, limit: int, agent_id: str | None = None
) -> list[AuditEntry]:
    """Entries with ``id > after``, ascending. (``agent_id`` filters by scan:
    the table has no agent index, and the schema is not ours to change.)"""
    stmt = sa.select(audit).where(audit.c.id > after)
    if agent_id is not None:
        stmt = stmt.where(audit.c.agent_id == agent_id)
    stmt = stmt.order_by(audit.c.id).limit(limit)
    return [row_to_entry(r) for r in conn.execute(stmt).mappings()]


def read_tail(conn: Connection, *, limit: int, agent_id: str | None = None) -> list[AuditEntry]:
    """The newest ``limit`` entries, ascending."""
    stmt = sa.select(audit)
    if agent_id is not None:
        stmt = stmt.where(audit.c.agent_id == agent_id)
    stmt = stmt.order_by(audit.c.id.desc()).limit(limit)
    rows = [row_to_entry(r) for r in conn.execute(stmt).mappings()]
    rows.reverse()
    return rows


def last_id(conn: Connection) -> int:
    return int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(audit.c.id), 0))).scalar_one())


# --- spend -------------------------------------------------------------------

_COST = str(EventType.COST_UPDATED)
_STATE = str(EventType.STATE_CHANGED)
_MARKER_PAGE = 100


def spend_since(conn: Connection, since: float) -> float:
    """USD spent by all agents in events with ``ts >= since``.

    A ``CostUpdated`` carrying ``delta_usd`` (what its turn cost) adds that.
    Older events have only ``cost_usd``, the running total of one Claude Code
    PROCESS, and every process is preceded by a ``StateChanged(new="starting")``
    of its agent (spawn, resume, fork); for those, each event adds ``cost_usd -
    the previous running total of the same process``, the baseline being the
    last such figure before the window (0 if a start came after it). A running
    total of 0 is skipped (a result without a cost says nothing), and one that
    goes DOWN without a start in between is taken as a new process.

    Cost: one scan of the events in the window (``ts`` is not indexed) plus,
    for old events only, one index-backed look-back per agent.
    """
    window = conn.execute(
        sa.select(events.c.id, events.c.agent_id, events.c.type, events.c.data)
        .where(events.c.ts >= since, events.c.type.in_([_COST, _STATE]))
        .order_by(events.c.id)
    ).all()
    by_agent: dict[str, list[tuple[int, str, Any]]] = defaultdict(list)
    for event_id, agent_id, type_, data in window:
        by_agent[agent_id].append((event_id, type_, data))
    total = 0.0
    for agent_id, rows in by_agent.items():
        prev: float | None = None  # the process's running total, looked up when needed
        for event_id, type_, data in rows:
            if type_ == _STATE:
                if _is_start(data):
                    prev = 0.0
                continue
            cost = float(data.get("cost_usd") or 0.0)
            if "delta_usd" in data:
                total += max(0.0, float(data["delta_usd"] or 0.0))
            elif cost > 0.0:
                if prev is None:
                    prev = _baseline(conn, agent_id, before_id=event_id)
                total += cost - prev if cost >= prev else cost
            if cost > 0.0:
                prev = cost
    return total


def _is_start(data: Any) -> bool:
    return isinstance(data, dict) and data.get("new") == "starting"


def _baseline(conn: Connection, agent_id: str, *, before_id: int) -> float:
    """The agent's process-cumulative cost just before ``before_id``."""
    cursor = before_id
    while True:
        page = conn.execute(
            sa.select(events.c.id, events.c.type, events.c.data)
            .where(
                events.c.agent_id == agent_id,
                events.c.id < cursor,
                events.c.type.in_([_COST, _STATE]),
            )
            .order_by(events.c.id.desc())
            .limit(_MARKER_PAGE)
        ).all()
        for event_id, type_, data in page:
            cursor = event_id
            if type_ == _STATE:
                if _is_start(data):
                    return 0.0
                continue
            cost = float(data.get("cost_usd") or 0.0)
            if cost > 0.0:
                return cost
        if len(page) < _MARKER_PAGE:
            return 0.0
