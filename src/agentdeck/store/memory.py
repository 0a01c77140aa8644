"""Memory in the store: observations, session summaries and their full-text
index (migration 0003). Writes go through the store's one write path; a record
and its index row are written, replaced and deleted in the same transaction.

The index and search differ by backend, and only they: SQLite's FTS5 table
(``memory_search``) or PostgreSQL's tsvector table (``memory_search_pg``),
chosen in one place, ``backend``, by the connection's dialect.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.memory import (
    MemoryHit,
    MemoryKind,
    Observation,
    SessionSummary,
    kind_of,
    render_summary,
)
from agentdeck.errors import NotFound, UsageError
from agentdeck.store import memory_search, memory_search_pg
from agentdeck.store.memory_search import CANDIDATES
from agentdeck.store.schema import observations, summaries
from agentdeck.store.store import Store

MAX_LIMIT = 100

_HIT_NOUN = "memory record"


class IndexBackend(Protocol):
    """What a backend's index module gives: ``memory_search`` (SQLite, FTS5)
    and ``memory_search_pg`` (PostgreSQL, tsvector)."""

    def index(self, conn: Connection, memory_id: str, project: str, title: str, body: str) -> int:
        """Write a record's index row; returns its rowid."""

    def unindex(self, conn: Connection, rowids: Sequence[int]) -> None:
        """Delete index rows."""

    def storable(self, row: dict[str, Any]) -> dict[str, Any]:
        """A record's row as this database can hold it."""

    def search(
        self, conn: Connection, query: str, *, project: str | None, limit: int, cap: int
    ) -> list[MemoryHit]:
        """Ranked hits, at most ``limit``, from the newest ``cap`` matches."""


_BACKENDS: dict[str, IndexBackend] = {
    "sqlite": memory_search,
    "postgresql": memory_search_pg,
}


def backend(conn: Connection) -> IndexBackend:
    """The index and search of ``conn``'s database (the one place that chooses)."""
    return _BACKENDS[conn.dialect.name]


def observation_text(obs: Observation) -> tuple[str, str]:
    """``(title, body)`` as indexed."""
    title = obs.input_summary or obs.tool
    if not title.startswith(obs.tool):
        title = f"{obs.tool} {title}"
    return title, "\n".join([obs.output_excerpt, *obs.files])


def summary_text(summary: SessionSummary) -> tuple[str, str]:
    """``(title, body)`` as indexed: the summary as people read it, line 1 its title."""
    title, _, body = render_summary(summary).partition("\n")
    return title, body


class MemoryStore:
    def __init__(self, store: Store, *, candidates: int = CANDIDATES) -> None:
        self.store = store
        self.candidates = candidates

    async def add_observation(self, observation: Observation) -> None:
        """Keep one observation and index it."""
        row = dataclasses.asdict(observation)
        row["files"] = list(observation.files)
        title, body = observation_text(observation)

        def op(conn: Connection) -> None:
            exists = conn.execute(
                sa.select(observations.c.id).where(observations.c.id == observation.id)
            ).first()
            if exists is not None:  # delivered twice: keep the first
                return
            row["fts_rowid"] = backend(conn).index(
                conn, observation.id, observation.project, title, body
            )
            conn.execute(sa.insert(observations).values(backend(conn).storable(row)))

        await self.store._write(op)

    async def save_summary(self, summary: SessionSummary) -> SessionSummary:
        """Keep a session's summary, replacing the session's earlier one (its id
        is kept, so links stay valid); returns what was stored."""
        title, body = summary_text(summary)

        def op(conn: Connection) -> SessionSummary:
            earlier = conn.execute(
                sa.select(summaries.c.id, summaries.c.fts_rowid).where(
                    summaries.c.session_id == summary.session_id
                )
            ).first()
            kept = summary if earlier is None else dataclasses.replace(summary, id=earlier.id)
            row = dataclasses.asdict(kept)
            for name in ("files_changed", "commands", "errors"):
                row[name] = list(row[name])
            index = backend(conn)
            if earlier is not None:
                index.unindex(conn, [earlier.fts_rowid])
            row["fts_rowid"] = index.index(conn, kept.id, kept.project, title, body)
            values = index.storable(row)
            if earlier is None:
                conn.execute(sa.insert(summaries).values(values))
            else:
                conn.execute(sa.update(summaries).where(summaries.c.id == kept.id).values(values))
            return kept

        stored: SessionSummary = await self.store._write(op)
        return stored

    async def search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        """Ranked full-text search over observations and summaries. Any text is a
        valid query (punctuation is not FTS syntax here); an empty one finds nothing."""
        if limit < 1:
            raise UsageError(f"a search limit must be at least 1, not {limit}")
        limit = min(limit, MAX_LIMIT)
        cap = self.candidates

        def run(conn: Connection) -> list[MemoryHit]:
            return backend(conn).search(conn, query, project=project, limit=limit, cap=cap)

        return await self.store._read(run)

    async def get(self, memory_id: str) -> Observation | SessionSummary:
        """One record; ``NotFound`` for an unknown id."""
        kind = kind_of(memory_id)

        def query(conn: Connection) -> Observation | SessionSummary | None:
            found: Sequence[Observation | SessionSummary] = ()
            if kind is MemoryKind.OBSERVATION:
                found = _observations(conn, observations.c.id == memory_id)
            elif kind is MemoryKind.SUMMARY:
                found = _summaries(conn, summaries.c.id == memory_id)
            return found[0] if found else None

        record = await self.store._read(query)
        if record is None:
            raise NotFound(_HIT_NOUN, memory_id, hint="ids come from `agentdeck memory search`")
        return record

    async def forget(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        """Delete one record, a session's or a project's (index included);
        returns how many records went. Exactly one selector must be given."""
        given = [s for s in (memory_id, session_id, project) if s is not None]
        if len(given) != 1:
            raise UsageError(
                "forget needs exactly one of a memory id, a session id or a project",
                hint=f"{len(given)} were given",
            )
        if memory_id is not None:
            if kind_of(memory_id) is None:
                raise NotFound(_HIT_NOUN, memory_id)
            wheres = [observations.c.id == memory_id, summaries.c.id == memory_id]
        elif session_id is not None:
            wheres = [observations.c.session_id == session_id, summaries.c.session_id == session_id]
        else:
            wheres = [observations.c.project == project, summaries.c.project == project]

        def op(conn: Connection) -> int:
            count = 0
            for table, where in zip((observations, summaries), wheres, strict=True):
                rowids = list(conn.execute(sa.select(table.c.fts_rowid).where(where)).scalars())
                backend(conn).unindex(conn, rowids)
                count += conn.execute(sa.delete(table).where(where)).rowcount
            return count

        count: int = await self.store._write(op)
        if memory_id is not None and count == 0:
            raise NotFound(_HIT_NOUN, memory_id)
        return count

    async def session_observations(self, session_id: str, limit: int = 500) -> list[Observation]:
        """A session's observations, oldest first."""

        def query(conn: Connection) -> list[Observation]:
            where = observations.c.session_id == session_id
            order = (observations.c.ts, observations.c.fts_rowid)
            return _observations(conn, where, order=order, limit=limit)

        return await self.store._read(query)

    async def recent_summaries(self, project: str, limit: int = 10) -> list[SessionSummary]:
        """A project's newest session summaries, newest first."""

        def query(conn: Connection) -> list[SessionSummary]:
            where = summaries.c.project == project
            order = (summaries.c.ts.desc(), summaries.c.fts_rowid.desc())
            return _summaries(conn, where, order=order, limit=limit)

        return await self.store._read(query)

    async def recent_observations(self, project: str, limit: int = 50) -> list[Observation]:
        """A project's newest observations, newest first."""

        def query(conn: Connection) -> list[Observation]:
            where = observations.c.project == project
            order = (observations.c.ts.desc(), observations.c.fts_rowid.desc())
            return _observations(conn, where, order=order, limit=limit)

        return await self.store._read(query)

    async def stats(self) -> dict[str, int]:
        """``{"observations": N, "summaries": M, "projects": P}``."""

        def query(conn: Connection) -> dict[str, int]:
            projects = sa.union(sa.select(observations.c.project), sa.select(summaries.c.project))
            return {
                "observations": conn.execute(
                    sa.select(sa.func.count()).select_from(observations)
                ).scalar_one(),
                "summaries": conn.execute(
                    sa.select(sa.func.count()).select_from(summaries)
                ).scalar_one(),
                "projects": conn.execute(
                    sa.select(sa.func.count()).select_from(projects.subquery())
                ).scalar_one(),
            }

        return await self.store._read(query)


# --- rows -----------------------------------------------------------------------


def _observations(
    conn: Connection, where: Any, *, order: Sequence[Any] = (), limit: int | None = None
) -> list[Observation]:
    stmt = sa.select(observations).where(where).order_by(*order).limit(limit)
    return [_to_observation(row._mapping) for row in conn.execute(stmt)]


def _summaries(
    conn: Connection, where: Any, *, order: Sequence[Any] = (), limit: int | None = None
) -> list[SessionSummary]:
    stmt = sa.select(summaries).where(where).order_by(*order).limit(limit)
    return [_to_summary(row._mapping) for row in conn.execute(stmt)]


def _to_observation(m: Any) -> Observation:
    return Observation(
        id=m["id"],
        project=m["project"],
        session_id=m["session_id"],
        agent_id=m["agent_id"],
        ts=m["ts"],
        tool=m["tool"],
        input_summary=m["input_summary"],
        output_excerpt=m["output_excerpt"],
        files=tuple(_json_list(m["files"])),
        is_error=bool(m["is_error"]),
    )


def _to_summary(m: Any) -> SessionSummary:
    return SessionSummary(
        id=m["id"],
        project=m["project"],
        session_id=m["session_id"],
        agent_id=m["agent_id"],
        ts=m["ts"],
        files_changed=tuple(_json_list(m["files_changed"])),
        commands=tuple(_json_list(m["commands"])),
        errors=tuple(_json_list(m["errors"])),
        final_message=m["final_message"],
        request=m["request"],
        model_summary=m["model_summary"],
    )


def _json_list(value: Any) -> list[str]:
    if isinstance(value, str):  # written by a bulk loader as text
        value = json.loads(value)
    return [str(v) for v in value or ()]
