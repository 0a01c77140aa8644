"""Memory in the store: observations, session summaries and their FTS5 index
(migration 0003). Writes go through the store's one write path; a record and
its index row are written, replaced and deleted in the same transaction.

Search is bounded so that it costs about the same at a million records as at a
thousand. The index yields the newest ``CANDIDATES`` matches (FTS5 walks its
doclists newest first and stops), and only those are ranked, so a word found
in a third of the records ranks the newest of them: memory wants those anyway.
When every word of the query is selective (fewer than ``CANDIDATES`` records
each) they are ranked by FTS5's own bm25(). Otherwise bm25() is not called:
it first counts every record that holds each word (measured: 40 ms for a word
in 300,000 records), so the candidates get bm25's shape from cheap bounded
queries instead (see ``_bounded_scores``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

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
from agentdeck.store.schema import observations, summaries
from agentdeck.store.store import Store

MAX_LIMIT = 100
# How many of the newest matches are ranked (see the module docstring).
CANDIDATES = 200
# Only so many words of a query are used (a pasted paragraph stays fast).
MAX_TERMS = 12
# bm25 column weights: title, body, scope (the project token never scores).
TITLE_WEIGHT = 5.0
BODY_WEIGHT = 1.0
# A summary's score is multiplied by this: a session's gist beats one call.
SUMMARY_BOOST = 1.25
SNIPPET_TOKENS = 12
MIN_PREFIX = 3  # the index keeps prefixes of 3 to 5 characters (``prefix = '3 4 5'``)
SUMMARY_TOKEN = "ksummary"

# What FTS5's unicode61 tokenizer keeps as a token: letters and digits (the
# underscore separates). Everything else in a query is a separator here too.
_WORD = re.compile(r"[^\W_]+")
_TRAILING_STAR = re.compile(r"[^\W_]\*+\s*$")

_HIT_NOUN = "memory record"


def project_token(project: str) -> str:
    """The ``scope`` token of a project: a digest, so a path's words never match."""
    return "p" + hashlib.sha256(project.encode()).hexdigest()[:24]


def query_terms(text: str) -> tuple[list[str], bool]:
    """The words of a user's query (deduplicated, at most ``MAX_TERMS``) and
    whether the last is a prefix (written with a trailing ``*``)."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in words:
            words.append(word)
    return words[:MAX_TERMS], bool(_TRAILING_STAR.search(text))


def quoted_terms(words: Sequence[str], *, prefix: bool) -> list[str]:
    """Every word as a quoted FTS5 string: no user text is ever read as syntax
    (``AND``, ``NEAR``, ``-``, ``:``, ``"``...). A prefix shorter than
    ``MIN_PREFIX`` is taken as a word (``te*`` would walk half the index)."""
    quoted = [f'"{w}"' for w in words]
    if prefix and len(words[-1]) >= MIN_PREFIX:
        quoted[-1] += "*"
    return quoted


def in_project(expr: str, project: str | None) -> str:
    """``expr`` limited to one project's records: one more term to intersect."""
    if project is None:
        return expr
    return f'scope : "{project_token(project)}" AND {expr}'


def scope_text(memory_id: str, project: str) -> str:
    """The ``scope`` column: the project's token, and the kind's for summaries."""
    token = project_token(project)
    return f"{token} {SUMMARY_TOKEN}" if kind_of(memory_id) is MemoryKind.SUMMARY else token


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
            row["fts_rowid"] = _index(conn, observation.id, observation.project, title, body)
            conn.execute(sa.insert(observations).values(row))

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
            if earlier is not None:
                _unindex(conn, [earlier.fts_rowid])
            row["fts_rowid"] = _index(conn, kept.id, kept.project, title, body)
            if earlier is None:
                conn.execute(sa.insert(summaries).values(row))
            else:
                conn.execute(sa.update(summaries).where(summaries.c.id == kept.id).values(row))
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
        words, prefix = query_terms(query)
        if not words:
            return []
        attempts = [(False, prefix)]
        if len(words) > 1:
            attempts.append((True, prefix))  # no record has every word: any will do
        if not prefix and len(words[-1]) >= MIN_PREFIX:
            attempts.append((len(words) > 1, True))  # perhaps the last word is unfinished

        def run(conn: Connection) -> list[MemoryHit]:
            for any_word, as_prefix in attempts:
                terms = quoted_terms(words, prefix=as_prefix)
                hits = _search(conn, terms, any_word, project, limit, self.candidates)
                if hits:
                    return hits
            return []

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
                _unindex(conn, rowids)
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


# --- the index ----------------------------------------------------------------


def _index(conn: Connection, memory_id: str, project: str, title: str, body: str) -> int:
    result = conn.exec_driver_sql(
        "INSERT INTO memory_fts (title, body, scope, memory_id) VALUES (?, ?, ?, ?)",
        (title, body, scope_text(memory_id, project), memory_id),
    )
    rowid = result.lastrowid
    assert rowid is not None
    return int(rowid)


def _unindex(conn: Connection, rowids: Sequence[int]) -> None:
    if rowids:
        conn.exec_driver_sql("DELETE FROM memory_fts WHERE rowid = ?", [(r,) for r in rowids])


def _search(
    conn: Connection, terms: list[str], any_word: bool, project: str | None, limit: int, cap: int
) -> list[MemoryHit]:
    expr = "{title body} : (" + (" OR " if any_word else " ").join(terms) + ")"
    scoped = in_project(expr, project)
    candidates = _newest(conn, scoped, cap)
    if not candidates:
        return []
    floor = candidates[-1]
    frequencies = [_newest(conn, "{title body} : " + t, cap) for t in terms]
    if all(len(f) < cap for f in frequencies):
        # Every word is selective: FTS5's bm25(), whose cost is the words' matches.
        sql = _BM25.format(title=TITLE_WEIGHT, body=BODY_WEIGHT)
        scores = {r: -rank for r, rank in conn.exec_driver_sql(sql, (expr, floor))}
    else:
        scores = _bounded_scores(conn, terms, frequencies, scoped, candidates, any_word, cap)
    for rowid in _newest(conn, f'scope : "{SUMMARY_TOKEN}" AND {scoped}', cap, floor):
        if rowid in scores:
            scores[rowid] *= SUMMARY_BOOST
    best = sorted(candidates, key=lambda r: (-scores.get(r, 0.0), -r))[:limit]
    sql = _SNIPPETS.format(n=SNIPPET_TOKENS, rowids=",".join(map(str, best)))
    texts = {row[0]: row[1:] for row in conn.exec_driver_sql(sql, (expr,))}
    records = _records_by_id(conn, [str(texts[r][0]) for r in best if r in texts])
    hits: list[MemoryHit] = []
    for rowid in best:
        memory_id, title, title_snippet, body_snippet = texts[rowid]
        record = records[memory_id]
        kind = kind_of(memory_id)
        assert kind is not None
        hits.append(
            MemoryHit(
                id=memory_id,
                kind=kind,
                project=record["project"],
                session_id=record["session_id"],
                ts=record["ts"],
                title=title,
                snippet=body_snippet if "[" in (body_snippet or "") else title_snippet,
                score=scores.get(rowid, 0.0),
            )
        )
    return hits


def _bounded_scores(
    conn: Connection,
    terms: list[str],
    frequencies: list[list[int]],
    scoped: str,
    candidates: list[int],
    any_word: bool,
    cap: int,
) -> dict[int, float]:
    """bm25's shape where bm25() itself would cost too much: each word's IDF
    (its document frequency estimated from how far back its newest ``cap``
    matches reach) times the weight of the best column it is in; term
    frequency is taken as saturated (titles and excerpts are short)."""
    floor = candidates[-1]
    docs = max(1, int(conn.exec_driver_sql(_LAST_ROWID).scalar() or 1))
    scores = dict.fromkeys(candidates, 0.0)
    for term, newest in zip(terms, frequencies, strict=True):
        df = len(newest) if len(newest) < cap else cap * docs / max(1, docs - newest[-1] + 1)
        idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
        in_title = set(_newest(conn, f"{{title}} : {term} AND {scoped}", cap, floor))
        present = (
            _newest(conn, f"{{title body}} : {term} AND {scoped}", cap, floor)
            if any_word
            else candidates
        )
        for rowid in present:
            if rowid in scores:
                scores[rowid] += idf * (TITLE_WEIGHT if rowid in in_title else BODY_WEIGHT)
    return scores


def _newest(conn: Connection, expr: str, cap: int, floor: int = 0) -> list[int]:
    """Rowids of the newest ``cap`` matches (at or above ``floor``), newest first:
    FTS5 walks its doclists backwards and stops, whatever the number of matches."""
    return list(conn.exec_driver_sql(_NEWEST, (expr, floor, cap)).scalars())


_NEWEST = (
    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid >= ? "
    "ORDER BY rowid DESC LIMIT ?"
)
_LAST_ROWID = "SELECT rowid FROM memory_fts ORDER BY rowid DESC LIMIT 1"
_BM25 = (
    "SELECT rowid, bm25(memory_fts, {title}, {body}, 0.0) FROM memory_fts "
    "WHERE memory_fts MATCH ? AND rowid >= ?"
)
# snippet() re-reads and re-tokenizes a row's text: only for the hits shown.
_SNIPPETS = """
SELECT rowid, memory_id, title,
    snippet(memory_fts, 0, '[', ']', '…', {n}), snippet(memory_fts, 1, '[', ']', '…', {n})
FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({rowids})
"""


def _records_by_id(conn: Connection, ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for table in (observations, summaries):
        stmt = sa.select(table.c.id, table.c.project, table.c.session_id, table.c.ts).where(
            table.c.id.in_(ids)
        )
        found.update({row.id: row._mapping for row in conn.execute(stmt)})
    return found


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
