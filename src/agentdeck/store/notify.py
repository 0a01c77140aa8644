"""Dead letters of notifications (the ``notify_dead`` table of migration 0006).

A delivery that failed every attempt, or found its target's queue full, is kept
here with why, so it survives a restart and can be inspected and replayed.

What a letter says (why it failed: a target's own words, such as notify-send's
stderr) and carries (its payload) is scrubbed like the event log when written
and when read (a row an older version wrote is read scrubbed too); the payload
is built from the scrubbed log, so a replay sends what was meant to be sent.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.notify_status import DEAD, REPLAYED, DeadLetter
from agentdeck.core.redact import scrub, scrub_value
from agentdeck.errors import NotFound
from agentdeck.store.lookup import by_id_or_prefix
from agentdeck.store.rows import SAID as TABLE_SAID
from agentdeck.store.rows import said_scrubbed
from agentdeck.store.schema import notify_dead
from agentdeck.store.store import Store

__all__ = ["DEAD", "REPLAYED", "DeadLetter", "DeadLetters"]

SAID = TABLE_SAID["notify_dead"]  # what a letter carries and says: scrubbed


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    return said_scrubbed("notify_dead", data)


def _to_letter(row: Any) -> DeadLetter:
    return DeadLetter(**_scrubbed(dict(row._mapping)))


class DeadLetters:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def add(
        self, *, target: str, kind: str, payload: dict[str, Any], reason: str, attempts: int
    ) -> DeadLetter:
        letter = DeadLetter(
            id="dl" + secrets.token_hex(6),
            target=target,
            kind=kind,
            payload=scrub_value(payload),
            reason=scrub(reason),
            attempts=attempts,
            state=DEAD,
            created_at=time.time(),
        )
        row = letter.to_dict()

        def op(conn: Connection) -> None:
            conn.execute(sa.insert(notify_dead).values(row))

        await self.store._write(op)
        return letter

    async def get(self, letter_id: str) -> DeadLetter:
        def query(conn: Connection) -> DeadLetter | None:
            row = conn.execute(sa.select(notify_dead).where(notify_dead.c.id == letter_id)).first()
            return None if row is None else _to_letter(row)

        found = await self.store._read(query)
        if found is None:
            raise NotFound("dead letter", letter_id, hint="`agentdeck notify dead` lists them")
        return found

    async def find(self, ref: str) -> DeadLetter:
        """By id, or a unique id prefix of at least 4 characters."""
        return await by_id_or_prefix(self.store, notify_dead, ref, _to_letter, self.get)

    async def list_letters(
        self, *, include_replayed: bool = False, target: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Newest first."""

        def query(conn: Connection) -> list[DeadLetter]:
            stmt = sa.select(notify_dead).order_by(
                notify_dead.c.created_at.desc(), notify_dead.c.id
            )
            if not include_replayed:
                stmt = stmt.where(notify_dead.c.state == DEAD)
            if target is not None:
                stmt = stmt.where(notify_dead.c.target == target)
            return [_to_letter(r) for r in conn.execute(stmt.limit(limit))]

        return await self.store._read(query)

    async def settle(self, letter_id: str, *, delivered: bool, reason: str | None = None) -> None:
        """After a replay: ``replayed`` if it went through, else one more attempt and why."""
        now, said = time.time(), scrub(reason or "failed")

        def op(conn: Connection) -> None:
            where = notify_dead.c.id == letter_id
            if delivered:
                conn.execute(
                    sa.update(notify_dead).where(where).values(state=REPLAYED, replayed_at=now)
                )
            else:
                conn.execute(
                    sa.update(notify_dead)
                    .where(where)
                    .values(attempts=notify_dead.c.attempts + 1, reason=said)
                )

        await self.store._write(op)
