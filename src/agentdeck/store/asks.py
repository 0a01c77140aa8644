"""Asks in the store (the ``asks`` table of migration 0004): questions workers
put to their orchestrator or a person, and notes to an orchestrator.

Writes go through the store's one write path. An answer is conditional on the
question still being pending, so the orchestrator, a person and the timeout can
never all decide it; delivery is recorded once.

What a question (or a note) and its answer say is scrubbed like the event log,
both when written and when read (a row an older version wrote is read scrubbed
too): a secret put in a question or an answer reaches neither the table nor the
asker; a secret an agent needs comes through its environment or its files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.redact import scrub_value
from agentdeck.errors import NotFound
from agentdeck.store.lookup import by_id_or_prefix
from agentdeck.store.rows import SAID as TABLE_SAID
from agentdeck.store.rows import said_scrubbed
from agentdeck.store.schema import asks
from agentdeck.store.store import Store

SAID = TABLE_SAID["asks"]  # what a question and its answer say: scrubbed


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    return said_scrubbed("asks", data)


def _to_ask(row: Any) -> Ask:
    return Ask.from_dict(_scrubbed(dict(row._mapping)))


class AskStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(self, ask: Ask) -> Ask:
        row = _scrubbed(ask.to_dict())

        def op(conn: Connection) -> None:
            conn.execute(sa.insert(asks).values(row))

        await self.store._write(op)
        return Ask.from_dict(row)

    async def get(self, ask_id: str) -> Ask:
        def query(conn: Connection) -> Ask | None:
            row = conn.execute(sa.select(asks).where(asks.c.id == ask_id)).first()
            return None if row is None else _to_ask(row)

        found = await self.store._read(query)
        if found is None:
            raise NotFound("question", ask_id, hint="`agentdeck asks` lists the pending ones")
        return found

    async def find(self, ref: str) -> Ask:
        """By id, or a unique id prefix of at least 4 characters."""
        return await by_id_or_prefix(self.store, asks, ref, _to_ask, self.get)

    async def list_asks(
        self,
        *,
        states: Sequence[AskState] | None = (AskState.PENDING,),
        kind: AskKind | None = AskKind.QUESTION,
        agent_ids: Sequence[str] | None = None,
        to_agent_id: str | None = None,
        undelivered: bool = False,
        limit: int = 100,
    ) -> list[Ask]:
        """Newest first. ``agent_ids``: asked by these; ``to_agent_id``: addressed
        to this agent; ``undelivered``: the asker (or recipient) does not have it yet."""

        def query(conn: Connection) -> list[Ask]:
            stmt = sa.select(asks).order_by(asks.c.created_at.desc(), asks.c.id.desc())
            if states:
                stmt = stmt.where(asks.c.state.in_([str(s) for s in states]))
            if kind is not None:
                stmt = stmt.where(asks.c.kind == str(kind))
            if agent_ids is not None:
                stmt = stmt.where(asks.c.agent_id.in_(list(agent_ids)))
            if to_agent_id is not None:
                stmt = stmt.where(asks.c.to_agent_id == to_agent_id)
            if undelivered:
                stmt = stmt.where(asks.c.delivered_at.is_(None))
            return [_to_ask(r) for r in conn.execute(stmt.limit(limit))]

        return await self.store._read(query)

    async def decide(
        self, ask_id: str, state: AskState, *, by: str, answer: str | None = None
    ) -> Ask | None:
        """Answer (or expire, or cancel) a pending question; None if it was no
        longer pending."""
        now = time.time()
        said = scrub_value(answer)

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(asks)
                .where(asks.c.id == ask_id, asks.c.state == str(AskState.PENDING))
                .values(state=str(state), answered_at=now, answered_by=by, answer=said)
            )
            return bool(result.rowcount)

        changed = await self.store._write(op)
        return await self.get(ask_id) if changed else None

    async def claim_delivery(self, ask_id: str) -> bool:
        """Take the delivery of an answer (or a note) on: True for exactly one
        caller, across processes; the others must not tell it again."""
        now = time.time()

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(asks)
                .where(asks.c.id == ask_id, asks.c.delivered_at.is_(None))
                .values(delivered_at=now)
            )
            return bool(result.rowcount)

        claimed: bool = await self.store._write(op)
        return claimed

    async def mark_delivered(self, ask_ids: Sequence[str]) -> None:
        """The asker has its answer (a note: its recipient was told); notes move
        to ``delivered``."""
        if not ask_ids:
            return
        now = time.time()

        def op(conn: Connection) -> None:
            conn.execute(
                sa.update(asks)
                .where(asks.c.id.in_(list(ask_ids)), asks.c.delivered_at.is_(None))
                .values(delivered_at=now)
            )
            conn.execute(
                sa.update(asks)
                .where(
                    asks.c.id.in_(list(ask_ids)),
                    asks.c.kind == str(AskKind.NOTE),
                    asks.c.state == str(AskState.PENDING),
                )
                .values(state=str(AskState.DELIVERED))
            )

        await self.store._write(op)
