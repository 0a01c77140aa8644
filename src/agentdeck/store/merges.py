"""The merge queue in the store (the ``merges`` table of migration 0005).

Writes go through the store's one write path. Taking an entry is conditional on
it still being queued, so two processes never merge the same entry and a
cancelled one is never merged. What an entry says (its reason, its outcome with
the test's output) is scrubbed like the event log, both when written and when
read (a row an older version wrote is read scrubbed too); its test command is
kept as given, to be run, and scrubbed where it is shown (``MergeEntry.result``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.errors import NotFound
from agentdeck.store.lookup import by_id_or_prefix
from agentdeck.store.rows import SAID as TABLE_SAID
from agentdeck.store.rows import said_scrubbed
from agentdeck.store.schema import merges
from agentdeck.store.store import Store

SAID = TABLE_SAID["merges"]  # what an entry's merge said: scrubbed


def _scrubbed(data: dict[str, Any]) -> dict[str, Any]:
    return said_scrubbed("merges", data)


def _to_entry(row: Any) -> MergeEntry:
    return MergeEntry.from_dict(_scrubbed(dict(row._mapping)))


class MergeStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(self, entry: MergeEntry) -> MergeEntry:
        row = _scrubbed(entry.to_dict())  # a new entry says nothing yet: no cost

        def op(conn: Connection) -> None:
            conn.execute(sa.insert(merges).values(row))

        await self.store._write(op)
        return entry

    async def get(self, entry_id: str) -> MergeEntry:
        def query(conn: Connection) -> MergeEntry | None:
            row = conn.execute(sa.select(merges).where(merges.c.id == entry_id)).first()
            return None if row is None else _to_entry(row)

        found = await self.store._read(query)
        if found is None:
            raise NotFound("merge", entry_id, hint="`agentdeck queue` lists the merge queue")
        return found

    async def find(self, ref: str) -> MergeEntry:
        """By id, or a unique id prefix of at least 4 characters."""
        return await by_id_or_prefix(self.store, merges, ref, _to_entry, self.get)

    async def list_merges(
        self,
        *,
        states: Sequence[MergeState] | None = None,
        repo: str | None = None,
        agent_id: str | None = None,
        oldest_first: bool = False,
        limit: int = 100,
    ) -> list[MergeEntry]:
        """Newest first, unless ``oldest_first`` (the queue's order)."""

        def query(conn: Connection) -> list[MergeEntry]:
            order = merges.c.enqueued_at.asc() if oldest_first else merges.c.enqueued_at.desc()
            stmt = sa.select(merges).order_by(order, merges.c.id)
            if states:
                stmt = stmt.where(merges.c.state.in_([str(s) for s in states]))
            if repo is not None:
                stmt = stmt.where(merges.c.repo == repo)
            if agent_id is not None:
                stmt = stmt.where(merges.c.agent_id == agent_id)
            return [_to_entry(r) for r in conn.execute(stmt.limit(limit))]

        return await self.store._read(query)

    async def take(
        self, entry_id: str, *, again: bool = False, host: str | None = None
    ) -> MergeEntry | None:
        """``queued → merging`` under this process (of runner host ``host``, on a
        deck with hosts); None if it is no longer queued (cancelled, or taken
        elsewhere). ``again``: also an entry left ``merging`` by a process (or a
        host) that died."""
        now, pid = time.time(), os.getpid()
        allowed = [str(MergeState.QUEUED)] + ([str(MergeState.MERGING)] if again else [])

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(merges)
                .where(merges.c.id == entry_id, merges.c.state.in_(allowed))
                .values(
                    state=str(MergeState.MERGING), started_at=now, owner_pid=pid, owner_host=host
                )
            )
            return bool(result.rowcount)

        taken = await self.store._write(op)
        return await self.get(entry_id) if taken else None

    async def finish(
        self,
        entry_id: str,
        state: MergeState,
        *,
        reason: str,
        commit: str | None = None,
        outcome: dict[str, Any] | None = None,
    ) -> MergeEntry:
        now = time.time()
        said = _scrubbed({"reason": reason, "outcome": outcome or {}})

        def op(conn: Connection) -> None:
            conn.execute(
                sa.update(merges)
                .where(merges.c.id == entry_id)
                .values(
                    state=str(state),
                    finished_at=now,
                    reason=said["reason"],
                    commit=commit,
                    outcome=said["outcome"],
                )  # fmt: skip
            )

        await self.store._write(op)
        return await self.get(entry_id)

    async def cancel(self, entry_id: str, *, by: str) -> MergeEntry | None:
        """A queued entry cancelled; None if it had already been taken or ended."""
        now = time.time()

        def op(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(merges)
                .where(merges.c.id == entry_id, merges.c.state == str(MergeState.QUEUED))
                .values(
                    state=str(MergeState.CANCELLED), finished_at=now, reason=f"cancelled by {by}"
                )
            )
            return bool(result.rowcount)

        cancelled = await self.store._write(op)
        return await self.get(entry_id) if cancelled else None
