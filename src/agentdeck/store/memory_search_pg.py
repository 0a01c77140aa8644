"""Memory search on PostgreSQL, over the ``memory_fts`` table of migration 0003
there: each row's ``tsv`` is generated from its ``title`` (weight A, english),
``body`` (B, english) and ``scope`` (D, simple: the project's token and the
summaries' token), under a GIN index.

The same search as SQLite's (``memory_search``), the same attempts (every
word, any word, the last word as a prefix) and the same bounded cost: only
the newest ``cap`` matches are ranked. Each is scored as there: per word, its
IDF (its document frequency estimated from how far back its newest ``cap``
matches reach) times how well the record holds it, here ``ts_rank`` with
title weighing ``TITLE_WEIGHT`` times body and scope nothing; a summary
times ``SUMMARY_BOOST``. Snippets are ``ts_headline``'s, marked ``[`` ``]``
with ``…`` where text was cut, as FTS5's snippet() gives them.

A query's text never becomes tsquery syntax: its words are the letters and
digits ``query_terms`` extracts, normalised by the database's own english
configuration (``to_tsvector``, which parses no operators), and each lexeme
is written quoted into a tsquery passed as a parameter, restricted to the
weights searched (``:AB``, so a word never matches a record's scope).

The indexed text is written with a separator after each punctuation mark
(``index_text``), so that PostgreSQL's parser, which reads a path, a host or
an address as one word, finds the words in them as FTS5 does. What the
engines still do differently: PostgreSQL's english configuration drops stop
words (``the``, ``not``...) from the index, so such a word is never found
here (FTS5 keeps every word), and its stemmer is Snowball's, not Porter's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.memory import MemoryHit, MemoryKind, kind_of
from agentdeck.store.memory_search import (
    BODY_WEIGHT,
    MIN_PREFIX,
    SNIPPET_TOKENS,
    SUMMARY_BOOST,
    SUMMARY_TOKEN,
    TITLE_WEIGHT,
    attempts,
    project_token,
    query_terms,
    scope_text,
)

CONFIG = "english"
# A query with a prefix first looks among this many times ``cap`` newest rows.
PREFIX_WINDOW = 25
# A longer word is in no tsvector (to_tsvector leaves it out) nor a valid tsquery.
MAX_WORD_BYTES = 2046
# ts_rank's weights, in its order D, C, B, A: scope never scores, a body
# counts BODY_WEIGHT / TITLE_WEIGHT of a title. A word once in a title ranks
# 1 / RANK_SCALE, so scores are on SQLite's scale (TITLE_WEIGHT times its IDF).
RANK_WEIGHTS = [0.0, 0.0, BODY_WEIGHT / TITLE_WEIGHT, 1.0]
RANK_SCALE = TITLE_WEIGHT * 1.64493406685  # ts_rank divides by pi^2 / 6
_OPEN, _CLOSE = "\ue000", "\ue001"
# Written after each ASCII punctuation mark of the indexed text (``index_text``).
SEPARATOR = "\x01"
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_SEPARATED = r"\1" + SEPARATOR
HEADLINE_OPTIONS = (
    f'StartSel="{_OPEN}", StopSel="{_CLOSE}", MaxWords={SNIPPET_TOKENS}, '
    "MinWords=4, ShortWord=0, MaxFragments=1"
)


@dataclass(frozen=True)
class _Term:
    """One word of the query as tsquery text: ``match`` within title and body
    (weights A and B), ``plain`` for ts_headline (whose text has no weights)."""

    match: str
    plain: str
    prefix: bool


def index(conn: Connection, memory_id: str, project: str, title: str, body: str) -> int:
    """Write a record's index row (``tsv`` is generated); returns its rowid."""
    row = {
        "title": index_text(title),
        "body": index_text(body),
        "scope": scope_text(memory_id, project),
        "memory_id": memory_id,
    }
    return int(conn.execute(_INSERT, row).scalar_one())


def storable(row: dict[str, Any]) -> dict[str, Any]:
    """A record's row as PostgreSQL can hold it: its text (and JSON) holds no
    NUL character, which a tool's output may carry; those go, the rest stays."""
    return {name: _stored(value) for name, value in row.items()}


def _stored(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_stored(v) for v in value]
    return value


def unindex(conn: Connection, rowids: Sequence[int]) -> None:
    """Delete index rows."""
    if rowids:
        conn.execute(_DELETE, {"rowids": [int(r) for r in rowids]})


def search(
    conn: Connection, query: str, *, project: str | None, limit: int, cap: int
) -> list[MemoryHit]:
    """Ranked hits for ``query`` (see ``memory_search.attempts``)."""
    words, prefix = query_terms(query)
    words = [w for w in words if len(w.encode()) <= MAX_WORD_BYTES]
    if not words:
        return []
    # Each query planned for its words: a common word walks the newest rows
    # back to its ``cap`` matches, a rare one asks the GIN index; a generic
    # plan (psycopg prepares a statement run often) would do one for both.
    conn.execute(_CUSTOM_PLANS)
    lexemes = _lexemes(conn, words)
    reach: dict[str, tuple[int, int]] = {}  # each term's newest matches, shared
    for any_word, as_prefix in attempts(words, prefix):
        terms = _terms(words, lexemes, as_prefix=as_prefix)
        hits = _search(conn, terms, any_word, project, limit, cap, reach)
        if hits:
            return hits
    return []


def _lexemes(conn: Connection, words: list[str]) -> list[list[str]]:
    """Each word's lexemes under the english configuration (none for a stop
    word; more than one only where its parser splits a word)."""
    rows = conn.execute(_LEXEMES, {"words": words}).all()
    found = {int(n): list(lexemes or ()) for n, lexemes in rows}
    return [found.get(n, []) for n in range(1, len(words) + 1)]


def _terms(words: list[str], lexemes: list[list[str]], *, as_prefix: bool) -> list[_Term]:
    """The query's words as tsquery texts; a stop word is left out (it is in no
    record's index) unless it is the prefix, which is then taken as typed. A
    prefix shorter than ``MIN_PREFIX`` is taken as a word, as on SQLite."""
    terms: list[_Term] = []
    last = len(words) - 1
    for n, (word, found) in enumerate(zip(words, lexemes, strict=True)):
        star = as_prefix and n == last and len(word) >= MIN_PREFIX
        if star and not found:
            found = [word]
        if not found:
            continue
        suffix = ":*" if star else ":"
        quoted = [_quoted(lexeme) for lexeme in found]
        terms.append(
            _Term(
                match=_all(f"{q}{suffix}AB" for q in quoted),
                plain=_all(f"{q}{suffix}" if star else q for q in quoted),
                prefix=star,
            )
        )
    return terms


def _search(
    conn: Connection,
    terms: list[_Term],
    any_word: bool,
    project: str | None,
    limit: int,
    cap: int,
    reach: dict[str, tuple[int, int]],
) -> list[MemoryHit]:
    if not terms:
        return []
    joined = (" | " if any_word else " & ").join(f"( {t.match} )" for t in terms)
    scoped = joined if project is None else f"{_scope(project_token(project))} & ( {joined} )"
    params = {"query": scoped, "words": [t.match for t in terms], "weights": RANK_WEIGHTS}
    # A project's records are a known few of the newest (its token is a word the
    # planner has counted): the index intersects them with a prefix cheaply.
    prefix = project is None and any(t.prefix for t in terms)
    if len(terms) == 1 and project is None:
        # The candidates are the word's newest matches: its reach comes with them.
        rows = _newest(conn, _CANDIDATES, params, cap, prefix)
        reach.setdefault(terms[0].match, (len(rows), int(rows[-1][0]) if rows else 0))
    else:
        for term in terms:
            if term.match not in reach:
                newest = _newest(conn, _REACH, {"query": term.match}, cap, term.prefix)
                reach[term.match] = (len(newest), int(newest[-1][0]) if newest else 0)
        counts = [reach[t.match][0] for t in terms]
        if not any(counts) or (not any_word and not all(counts)):
            return []  # a word found nowhere: no need to look for records with all
        rows = _newest(conn, _CANDIDATES, params, cap, prefix)
    if not rows:
        return []
    docs = max(1, int(rows[0][3] or 1))
    idfs = [_idf(*reach[t.match], docs=docs, cap=cap) for t in terms]
    scores: dict[int, float] = {}
    for rowid, memory_id, ranks, _last in rows:
        score = sum(idf * float(r) * RANK_SCALE for idf, r in zip(idfs, ranks, strict=True))
        if kind_of(memory_id) is MemoryKind.SUMMARY:
            score *= SUMMARY_BOOST
        scores[int(rowid)] = score
    best = sorted(scores, key=lambda r: (-scores[r], -r))[:limit]
    plain = (" | " if any_word else " & ").join(f"( {t.plain} )" for t in terms)
    return _hits(conn, best, scores, plain)


def _newest(
    conn: Connection,
    statements: tuple[sa.TextClause, sa.TextClause],
    params: dict[str, Any],
    cap: int,
    prefix: bool,
) -> list[sa.Row[Any]]:
    """The newest ``cap`` matches by ``statements`` (over the whole table, or
    over the newest ``cap * PREFIX_WINDOW`` rows). The planner knows how
    common a word is, not a prefix (it guesses rare, asks the GIN index for
    every match and sorts them: 80 ms for a prefix in 9% of 100,000 records),
    so a prefix is first looked for among the newest rows, walking back; only
    when they hold too few matches is the index asked."""
    full, recent = statements
    if prefix:
        rows = conn.execute(recent, {**params, "cap": cap, "window": cap * PREFIX_WINDOW}).all()
        if len(rows) >= cap:
            return list(rows)
    return list(conn.execute(full, {**params, "cap": cap}).all())


def _idf(count: int, floor: int, *, docs: int, cap: int) -> float:
    """bm25's IDF of a word with ``count`` of its newest matches seen (at most
    ``cap``), the oldest of them at rowid ``floor``."""
    df = count if count < cap else cap * docs / max(1, docs - floor + 1)
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def _hits(
    conn: Connection, best: list[int], scores: dict[int, float], plain: str
) -> list[MemoryHit]:
    """The shown hits: headlines (ts_headline parses a row's text again, so
    only for these) and where each record came from."""
    params = {"rowids": best, "query": plain, "options": HEADLINE_OPTIONS}
    texts = {int(row[0]): row[1:] for row in conn.execute(_HEADLINES, params)}
    records = _records(conn, [str(texts[r][0]) for r in best if r in texts])
    hits: list[MemoryHit] = []
    for rowid in best:
        if rowid not in texts or texts[rowid][0] not in records:
            continue  # not a record's row (never written so; a hit needs both)
        memory_id, title, body, title_line, body_line = (_shown(t) for t in texts[rowid])
        project, session_id, ts = records[memory_id]
        kind = kind_of(memory_id)
        assert kind is not None
        snippet = _snippet(body_line, body) if _OPEN in body_line else _snippet(title_line, title)
        hits.append(
            MemoryHit(
                id=memory_id,
                kind=kind,
                project=project,
                session_id=session_id,
                ts=ts,
                title=title,
                snippet=snippet,
                score=scores[rowid],
            )
        )
    return hits


def _snippet(headline: str, text: str) -> str:
    """ts_headline's words as FTS5's snippet() gives them: matches in ``[ ]``,
    ``…`` where the text goes on before or after."""
    bare = headline.replace(_OPEN, "").replace(_CLOSE, "")
    marked = headline.replace(_OPEN, "[").replace(_CLOSE, "]")
    whole = text.strip()
    if bare.strip() and not whole.startswith(bare.strip()):
        marked = "…" + marked
    if bare.strip() and not whole.endswith(bare.strip()):
        marked += "…"
    return marked


def _records(conn: Connection, memory_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """``memory_id -> (project, session_id, ts)``, from the table of each kind."""
    wanted = {
        kind: [i for i in memory_ids if kind_of(i) is kind]
        for kind in (MemoryKind.OBSERVATION, MemoryKind.SUMMARY)
    }
    params = {"observed": wanted[MemoryKind.OBSERVATION], "summed": wanted[MemoryKind.SUMMARY]}
    return {row[0]: tuple(row[1:]) for row in conn.execute(_RECORDS, params)}


def _quoted(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand: whatever it holds is one lexeme."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _all(parts: Any) -> str:
    listed = list(parts)
    return listed[0] if len(listed) == 1 else "( " + " & ".join(listed) + " )"


def _scope(token: str) -> str:
    return f"{_quoted(token)}:D"


def index_text(text: str) -> str:
    """``text`` as the index row holds it: every ASCII punctuation mark followed
    by ``SEPARATOR``, which PostgreSQL's parser takes as a space and a reader
    never sees (``_shown``). Its parser reads ``tests/test_retry.py`` or
    ``a.b@c.io`` as one word; FTS5 (unicode61) reads every letter-and-digit run
    as a word, and so does the index here: ``retry`` finds the file."""
    return _PUNCTUATION.sub(_SEPARATED, _text(text).replace(SEPARATOR, ""))


def _shown(text: str) -> str:
    return text.replace(SEPARATOR, "")


def _text(value: str) -> str:
    """PostgreSQL's text holds no NUL character: the index copy goes without."""
    return value.replace("\x00", "") if "\x00" in value else value


assert SUMMARY_TOKEN.isalnum()  # a scope token is one lexeme in the simple configuration

_INSERT = sa.text(
    "INSERT INTO memory_fts (title, body, scope, memory_id) "
    "VALUES (:title, :body, :scope, :memory_id) RETURNING rowid"
)
_DELETE = sa.text("DELETE FROM memory_fts WHERE rowid = ANY(:rowids)")
_LEXEMES = sa.text(
    f"SELECT w.n, tsvector_to_array(to_tsvector('{CONFIG}', w.word)) "
    "FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(word, n)"
)
# Over the whole table, or over the newest rows (see ``_newest``).
_EVERY = "memory_fts"
_RECENT = "(SELECT * FROM memory_fts ORDER BY rowid DESC LIMIT :window) AS recent"


def _over(sql: str) -> tuple[sa.TextClause, sa.TextClause]:
    return sa.text(sql.format(source=_EVERY)), sa.text(sql.format(source=_RECENT))


# A term's newest ``cap`` matches.
_REACH = _over(
    "SELECT rowid FROM {source} WHERE tsv @@ CAST(:query AS tsquery) ORDER BY rowid DESC LIMIT :cap"
)
_CUSTOM_PLANS = sa.text("SELECT set_config('plan_cache_mode', 'force_custom_plan', true)")
# The newest ``cap`` matches, each with every word's ts_rank in it (and the last rowid).
_CANDIDATES = _over(
    "SELECT c.rowid, c.memory_id, ARRAY("
    "  SELECT ts_rank(CAST(:weights AS real[]), c.tsv, CAST(w.query AS tsquery)) "
    "  FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS w(query, n) ORDER BY w.n), "
    "  (SELECT max(rowid) FROM memory_fts) "
    "FROM (SELECT rowid, memory_id, tsv FROM {source} "
    "  WHERE tsv @@ CAST(:query AS tsquery) ORDER BY rowid DESC LIMIT :cap) AS c"
)
_HEADLINES = sa.text(
    "SELECT rowid, memory_id, title, body, "
    f"  ts_headline('{CONFIG}', title, CAST(:query AS tsquery), :options), "
    f"  ts_headline('{CONFIG}', body, CAST(:query AS tsquery), :options) "
    "FROM memory_fts WHERE rowid = ANY(:rowids)"
)
_RECORDS = sa.text(
    "SELECT id, project, session_id, ts FROM observations WHERE id = ANY(:observed) "
    "UNION ALL "
    "SELECT id, project, session_id, ts FROM summaries WHERE id = ANY(:summed)"
)
