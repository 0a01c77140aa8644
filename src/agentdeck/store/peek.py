"""Read-only looks at the database with the standard library's ``sqlite3``.

For the CLI's quick path when no daemon runs: ``agentdeck ls`` should not pay for
SQLAlchemy (200 ms to import) to read a few rows. A peek never writes, never
migrates: ``Peek.open`` returns None unless the file exists at the schema's head
(``store.head``), and the caller then goes the long way (``Store.open``), which
creates or migrates it. Rows become the same domain objects as the store's
(``rows``, the records' ``from_dict``), and an agent is found by the same rule
(``core.agent.find_agent``); what approvals, asks and merges say is scrubbed as
the store reads it (``SAID``: a row an older version wrote raw is shown scrubbed).

SQLite only: when ``AGENTDECK_DATABASE_URL`` is set the store is in PostgreSQL and
the home's file, if any, is stale; ``Peek.open`` then returns None, so the caller
goes the long way (which opens the PostgreSQL store).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import find_agent
from agentdeck.settings_database import url_in
from agentdeck.store.head import HEAD
from agentdeck.store.rows import SAID as SAID  # what the store reads scrubbed, by table
from agentdeck.store.rows import row_to_agent, row_to_event, said_scrubbed

if TYPE_CHECKING:
    from agentdeck.core.agent import Agent
    from agentdeck.core.approvals import Approval
    from agentdeck.core.asks import Ask
    from agentdeck.core.event_types import StoredEvent
    from agentdeck.core.merge_queue import MergeEntry

# The JSON columns of the tables read here (SQLAlchemy's JSON type: text in SQLite).
_JSON = frozenset({"spec", "extra", "data", "input", "outcome", "questions"})
_BUSY_MS = 5000
_NEWEST_FIRST = "ORDER BY created_at DESC, id DESC"


def _row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> dict[str, Any]:
    row = {}
    for (name, *_), value in zip(cursor.description, values, strict=True):
        row[name] = json.loads(value) if name in _JSON and isinstance(value, str) else value
    return row


def _scrubbed(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``rows`` say scrubbed as the store reads it (``rows.SAID``)."""
    return [said_scrubbed(table, r) for r in rows]


class Peek:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, db_path: Path, environ: Mapping[str, str] | None = None) -> Peek | None:
        """A read-only connection, or None when the database is missing or not at
        head, or the store is not this file (a database URL is set)."""
        if url_in(os.environ if environ is None else environ):
            return None
        if not db_path.is_file():
            return None
        try:
            conn = sqlite3.connect(f"{db_path.absolute().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        conn.row_factory = _row
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            found = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.Error:
            found = None
        if found is None or found["version_num"] != HEAD:
            conn.close()
            return None
        return cls(conn)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Peek:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self._conn.execute(sql, tuple(params)).fetchall()

    # --- agents -----------------------------------------------------------------

    def agents(
        self,
        *,
        states: Sequence[str] | None = None,
        limit: int = 100,
        roots: bool = False,
        parent: str | None = None,
        archived: bool = False,
    ) -> list[Agent]:
        """Newest first, archived left out unless ``archived``; the children of the
        agent id ``parent``, or only those without one (``Store.list_agents``)."""
        where: list[str] = [] if archived else ["archived = 0"]
        params: list[Any] = []
        if parent is not None:
            where.append("parent_id = ?")
            params.append(parent)
        elif roots:
            where.append("parent_id IS NULL")
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            params += list(states)
        sql = f"SELECT * FROM agents {_where(where)} {_NEWEST_FIRST} LIMIT ?"
        return [row_to_agent(r) for r in self._all(sql, [*params, limit])]

    def find_agent(self, ref: str) -> Agent:
        def by_id(agent_id: str) -> Agent | None:
            rows = self._all("SELECT * FROM agents WHERE id = ?", [agent_id])
            return row_to_agent(rows[0]) if rows else None

        def by_prefix(prefix: str) -> list[Agent]:
            pattern = prefix.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
            sql = f"SELECT * FROM agents WHERE id LIKE ? ESCAPE '\\' {_NEWEST_FIRST} LIMIT 10"
            return [row_to_agent(r) for r in self._all(sql, [pattern])]

        def by_name(name: str) -> list[Agent]:
            sql = f"SELECT * FROM agents WHERE name = ? {_NEWEST_FIRST} LIMIT 10"
            return [row_to_agent(r) for r in self._all(sql, [name])]

        return find_agent(ref, by_id=by_id, by_prefix=by_prefix, by_name=by_name)

    def children(self, parent_ids: Sequence[str], limit: int = 10_000) -> list[Agent]:
        """Oldest first, archived included (``Store.children``)."""
        if not parent_ids:
            return []
        marks = ", ".join("?" * len(parent_ids))
        sql = f"SELECT * FROM agents WHERE parent_id IN ({marks}) ORDER BY created_at, id LIMIT ?"
        return [row_to_agent(r) for r in self._all(sql, [*parent_ids, limit])]

    def descendants(self, root_ids: Sequence[str], limit: int = 10_000) -> list[Agent]:
        """Level by level (``Store.descendants``)."""
        found: list[Agent] = []
        level, seen = list(root_ids), set(root_ids)
        while level and len(found) < limit:
            below = [a for a in self.children(level, limit - len(found)) if a.id not in seen]
            seen.update(a.id for a in below)
            found += below
            level = [a.id for a in below]
        return found

    # --- the log and the inboxes --------------------------------------------------

    def events(
        self, agent_id: str | None, *, after: int = 0, limit: int = 1000
    ) -> list[StoredEvent]:
        """Oldest first; every agent's when ``agent_id`` is None (``Store.read``)."""
        if agent_id is None:
            sql = "SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?"
            return [row_to_event(r) for r in self._all(sql, [after, limit])]
        sql = "SELECT * FROM events WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?"
        return [row_to_event(r) for r in self._all(sql, [agent_id, after, limit])]

    def approvals(self, states: Sequence[str] | None, limit: int = 100) -> list[Approval]:
        from agentdeck.core.approvals import Approval

        where, params = self._states(states)
        sql = f"SELECT * FROM approvals {where} ORDER BY created_at DESC LIMIT ?"
        rows = _scrubbed("approvals", self._all(sql, [*params, limit]))
        return [Approval.from_dict(r) for r in rows]

    def asks(self, states: Sequence[str] | None, limit: int = 100) -> list[Ask]:
        """Questions (not grants or other kinds), newest first (``AskStore.list_asks``)."""
        from agentdeck.core.asks import Ask

        where, params = self._states(states, "kind = 'question'")
        sql = f"SELECT * FROM asks {where} ORDER BY created_at DESC, id DESC LIMIT ?"
        return [Ask.from_dict(r) for r in _scrubbed("asks", self._all(sql, [*params, limit]))]

    def merges(self, limit: int = 100) -> list[MergeEntry]:
        """The merge queue's entries, newest first (``MergeStore.list_merges``)."""
        from agentdeck.core.merge_queue import MergeEntry

        sql = "SELECT * FROM merges ORDER BY enqueued_at DESC, id LIMIT ?"
        return [MergeEntry.from_dict(r) for r in _scrubbed("merges", self._all(sql, [limit]))]

    @staticmethod
    def _states(states: Sequence[str] | None, *more: str) -> tuple[str, list[str]]:
        where = list(more)
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
        return _where(where), list(states or ())


def _where(conditions: list[str]) -> str:
    return "WHERE " + " AND ".join(conditions) if conditions else ""
