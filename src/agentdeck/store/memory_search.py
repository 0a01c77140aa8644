"""Memory search over the FTS5 index of migration 0003 (``memory_fts``).

Search is bounded so that it costs about the same at a million records as at a
thousand. The index yields the newest ``CANDIDATES`` matches (FTS5 walks its
doclists newest first and stops), and only those are ranked, so a word found
in a third of the records ranks the newest of them: memory wants those anyway.
When every word of the query is selective (fewer than ``CANDIDATES`` records
each) they are ranked by FTS5's own bm25(). Otherwise bm25() is not called:
it first counts every record that holds each word (measured: 40 ms for a word
in 300,000 records), so the candidates get bm25's shape from cheap bounded
queries instead (see ``_bounded_scores``).

The walk that finds the candidates is the expensive part (a common word paired
with a rarer one walks far back), so it is done once: it also brings each
candidate's id (a summary is known by it) and its title with the query's words
marked by highlight(), which tells which words are in the title. Which word a
marked token is (stemmed: ``tests`` marks ``testing``) is asked of FTS5 itself,
on a scratch in-memory table (``_TitleWords``).
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from agentdeck.core.memory import MemoryHit, MemoryKind, kind_of

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
# highlight() marks: private-use characters, which titles do not carry.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKED = re.compile(f"{_OPEN}(.*?){_CLOSE}", re.DOTALL)


def project_token(project: str) -> str:
    """The ``scope`` token of a project: a digest, so a path's words never match."""
    return "p" + hashlib.sha256(project.encode()).hexdigest()[:24]


def scope_text(memory_id: str, project: str) -> str:
    """The ``scope`` column: the project's token, and the kind's for summaries."""
    token = project_token(project)
    return f"{token} {SUMMARY_TOKEN}" if kind_of(memory_id) is MemoryKind.SUMMARY else token


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


def attempts(words: Sequence[str], prefix: bool) -> list[tuple[bool, bool]]:
    """The searches to try in turn, as ``(any_word, last_word_as_prefix)``:
    every word; then any word; then the last word as a prefix (perhaps it is
    unfinished). Both backends answer with the first that finds something."""
    tried = [(False, prefix)]
    if len(words) > 1:
        tried.append((True, prefix))  # no record has every word: any will do
    if not prefix and len(words[-1]) >= MIN_PREFIX:
        tried.append((len(words) > 1, True))  # perhaps the last word is unfinished
    return tried


def index(conn: Connection, memory_id: str, project: str, title: str, body: str) -> int:
    """Write a record's index row; returns its rowid (the record's ``fts_rowid``)."""
    result = conn.exec_driver_sql(
        "INSERT INTO memory_fts (title, body, scope, memory_id) VALUES (?, ?, ?, ?)",
        (title, body, scope_text(memory_id, project), memory_id),
    )
    rowid = result.lastrowid
    assert rowid is not None
    return int(rowid)


def storable(row: dict[str, Any]) -> dict[str, Any]:
    """A record's row as SQLite holds it: as it is."""
    return row


def unindex(conn: Connection, rowids: Sequence[int]) -> None:
    """Delete index rows (a record forgotten or its summary replaced)."""
    if rowids:
        conn.exec_driver_sql("DELETE FROM memory_fts WHERE rowid = ?", [(r,) for r in rowids])


def in_project(expr: str, project: str | None) -> str:
    """``expr`` limited to one project's records: one more term to intersect."""
    if project is None:
        return expr
    return f'scope : "{project_token(project)}" AND {expr}'


def search(
    conn: Connection, query: str, *, project: str | None, limit: int, cap: int = CANDIDATES
) -> list[MemoryHit]:
    """Ranked hits for ``query`` (see ``attempts`` for which searches are tried)."""
    words, prefix = query_terms(query)
    if not words:
        return []
    newest: dict[str, list[int]] = {}  # each word's newest matches, shared by the attempts
    for any_word, as_prefix in attempts(words, prefix):
        terms = quoted_terms(words, prefix=as_prefix)
        hits = _search(conn, terms, any_word, project, limit, cap, newest)
        if hits:
            return hits
    return []


def _search(
    conn: Connection,
    terms: list[str],
    any_word: bool,
    project: str | None,
    limit: int,
    cap: int,
    newest: dict[str, list[int]],
) -> list[MemoryHit]:
    for t in terms:
        if t not in newest:
            newest[t] = _newest(conn, "{title body} : " + t, cap)
    frequencies = [newest[t] for t in terms]
    if not any(frequencies) or (not any_word and not all(frequencies)):
        return []  # a word found nowhere: no walk needed to know nothing matches
    expr = "{title body} : (" + (" OR " if any_word else " ").join(terms) + ")"
    scoped = in_project(expr, project)
    if all(len(f) < cap for f in frequencies):
        # Every word is selective: FTS5's bm25(), whose cost is the words' matches
        # (over the unscoped expression: a project's token is in too many records).
        single = len(terms) == 1 and project is None
        candidates = (
            frequencies[0] if single else _matches(conn, scoped, cap, frequencies, any_word)
        )
        if not candidates:
            return []
        floor = candidates[-1]
        sql = _BM25.format(title=TITLE_WEIGHT, body=BODY_WEIGHT)
        scores = {r: -rank for r, rank in conn.exec_driver_sql(sql, (expr, floor))}
        # The few matches of rare words lie all over the table: reading each
        # one's id costs more than asking the index which are summaries.
        summary_expr = f'scope : "{SUMMARY_TOKEN}" AND {scoped}'
        for rowid in _within(conn, summary_expr, floor):
            if rowid in scores:
                scores[rowid] *= SUMMARY_BOOST
    else:
        rarest = min(frequencies, key=len)
        if not any_word and len(rarest) < cap:
            # At most the rarest word's few matches: all of them, oldest first,
            # which lets FTS5 skip through the other words' doclists.
            rows = list(conn.exec_driver_sql(_CANDIDATES_WITHIN, (scoped, rarest[-1])))
            rows.sort(key=lambda r: -int(r[0]))
        else:
            rows = list(conn.exec_driver_sql(_CANDIDATES, (scoped, cap)))
        if not rows:
            return []
        candidates = [int(r[0]) for r in rows]
        ids = {int(r[0]): str(r[1]) for r in rows}
        marked = {int(r[0]): set(_MARKED.findall(r[2] or "")) for r in rows}
        scores = _bounded_scores(
            conn, terms, frequencies, scoped, candidates, marked, any_word, cap
        )
        for rowid in candidates:
            if kind_of(ids[rowid]) is MemoryKind.SUMMARY:
                scores[rowid] *= SUMMARY_BOOST
    best = sorted(candidates, key=lambda r: (-scores.get(r, 0.0), -r))[:limit]
    return _hits(conn, scoped, best, scores)


def _bounded_scores(
    conn: Connection,
    terms: list[str],
    frequencies: list[list[int]],
    scoped: str,
    candidates: list[int],
    marked: dict[int, set[str]],
    any_word: bool,
    cap: int,
) -> dict[int, float]:
    """bm25's shape where bm25() itself would cost too much: each word's IDF
    (its document frequency estimated from how far back its newest ``cap``
    matches reach) times the weight of the best column it is in; term
    frequency is taken as saturated (titles and excerpts are short).

    ``marked`` is each candidate's title tokens that matched a word of the
    query. Which word they matched is asked of ``_TITLE_WORDS`` (one word:
    no need); with every word required, every candidate holds them all,
    otherwise each word's presence is one more bounded walk."""
    floor = candidates[-1]
    docs = max(1, int(conn.exec_driver_sql(_LAST_ROWID).scalar() or 1))
    scores = dict.fromkeys(candidates, 0.0)
    tokens = set().union(*marked.values())
    in_title = {t: _TITLE_WORDS.matching(t, tokens) if len(terms) > 1 else tokens for t in terms}
    for term, newest in zip(terms, frequencies, strict=True):
        df = len(newest) if len(newest) < cap else cap * docs / max(1, docs - newest[-1] + 1)
        idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
        present = (
            _within(conn, f"{{title body}} : {term} AND {scoped}", floor)
            if any_word
            else candidates
        )
        titled = in_title[term]
        for rowid in present:
            if rowid in scores:
                weight = TITLE_WEIGHT if marked[rowid] & titled else BODY_WEIGHT
                scores[rowid] += idf * weight
    return scores


def _hits(
    conn: Connection,
    scoped: str,
    best: list[int],
    scores: dict[int, float],
) -> list[MemoryHit]:
    """The shown hits: snippets (snippet() re-reads and re-tokenizes a row's
    text, so only for these) and where each record came from."""
    # A walk over the shown hits' range (at most the candidates), oldest
    # first: FTS5 skips to them, where looking each one up by rowid would seek
    # every word in every segment of the index once per hit.
    sql = _SNIPPETS.format(n=SNIPPET_TOKENS, rowids=",".join(map(str, best)))
    params = (scoped, min(best), max(best))
    texts = {int(row[0]): row[1:] for row in conn.exec_driver_sql(sql, params)}
    records = _records(conn, [str(texts[r][0]) for r in best if r in texts])
    hits: list[MemoryHit] = []
    for rowid in best:
        if rowid not in texts or texts[rowid][0] not in records:
            continue  # not a record's row (never written so; a hit needs both)
        memory_id, title, title_snippet, body_snippet = texts[rowid]
        project, session_id, ts = records[memory_id]
        kind = kind_of(memory_id)
        assert kind is not None
        hits.append(
            MemoryHit(
                id=memory_id,
                kind=kind,
                project=project,
                session_id=session_id,
                ts=ts,
                title=title,
                snippet=body_snippet if "[" in (body_snippet or "") else title_snippet,
                score=scores.get(rowid, 0.0),
            )
        )
    return hits


def _records(conn: Connection, memory_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """``memory_id -> (project, session_id, ts)``, from the table of each kind."""
    found: dict[str, tuple[Any, ...]] = {}
    for kind, table in (
        (MemoryKind.OBSERVATION, "observations"),
        (MemoryKind.SUMMARY, "summaries"),
    ):
        wanted = [i for i in memory_ids if kind_of(i) is kind]
        if wanted:
            sql = _RECORDS.format(table=table, marks=",".join("?" * len(wanted)))
            found.update(
                {row[0]: tuple(row[1:]) for row in conn.exec_driver_sql(sql, tuple(wanted))}
            )
    return found


def _newest(conn: Connection, expr: str, cap: int) -> list[int]:
    """Rowids of the newest ``cap`` matches, newest first: FTS5 walks its
    doclists backwards and stops, whatever the number of matches."""
    return list(conn.exec_driver_sql(_NEWEST, (expr, cap)).scalars())


def _matches(
    conn: Connection, expr: str, cap: int, frequencies: list[list[int]], any_word: bool
) -> list[int]:
    """``_newest``, or when every word is required and one has fewer than
    ``cap`` matches in all, every match: no more than that word's, and found
    oldest first (from its oldest), the direction in which FTS5 skips through
    the other words' doclists instead of reading them."""
    rarest = min(frequencies, key=len)
    if any_word or len(rarest) >= cap:
        return _newest(conn, expr, cap)
    return sorted(_within(conn, expr, rarest[-1]), reverse=True)


def _within(conn: Connection, expr: str, floor: int) -> set[int]:
    """Rowids of every match at or above ``floor`` (oldest first: FTS5 can skip)."""
    return set(conn.exec_driver_sql(_WITHIN, (expr, floor)).scalars())


class _TitleWords:
    """Which of a title's marked tokens a query word matches, as FTS5 says:
    the tokens are written to a scratch in-memory FTS5 table with the index's
    tokenizer, the word is matched against them, and the writes are rolled
    back. Answers are remembered (a word and a token always agree or never)."""

    MEMO = 20_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._memo: dict[tuple[str, str], bool] = {}

    def matching(self, term: str, tokens: Iterable[str]) -> set[str]:
        with self._lock:
            answers = {t: self._memo.get((term, t)) for t in set(tokens)}
            unknown = sorted(t for t, known in answers.items() if known is None)
            if unknown:
                found = self._ask(term, unknown)
                if len(self._memo) + len(unknown) > self.MEMO:
                    self._memo.clear()
                for t in unknown:
                    answers[t] = self._memo[(term, t)] = t in found
        return {t for t, matched in answers.items() if matched}

    def _ask(self, term: str, tokens: list[str]) -> set[str]:
        if self._db is None:
            self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._db.execute(_SCRATCH_DDL)
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO words (rowid, w) VALUES (?, ?)", enumerate(tokens))
            rows = db.execute("SELECT rowid FROM words WHERE words MATCH ?", (term,))
            return {tokens[r] for (r,) in rows}
        finally:
            db.execute("ROLLBACK")


_TITLE_WORDS = _TitleWords()

# The index's tokenizer (see ``MEMORY_FTS_DDL``), for ``_TitleWords``.
_SCRATCH_DDL = "CREATE VIRTUAL TABLE words USING fts5(w, tokenize = 'porter unicode61')"
_NEWEST = "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
_WITHIN = "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid >= ?"
# The candidates with what ranking needs of each, in the one walk.
_CANDIDATES = (
    f"SELECT rowid, memory_id, highlight(memory_fts, 0, '{_OPEN}', '{_CLOSE}') "
    "FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
)
_CANDIDATES_WITHIN = _CANDIDATES.replace("ORDER BY rowid DESC LIMIT ?", "AND rowid >= ?")
_SELECTIVE = (
    "SELECT rowid, memory_id FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
)
_LAST_ROWID = "SELECT rowid FROM memory_fts ORDER BY rowid DESC LIMIT 1"
_BM25 = (
    "SELECT rowid, bm25(memory_fts, {title}, {body}, 0.0) FROM memory_fts "
    "WHERE memory_fts MATCH ? AND rowid >= ?"
)
# snippet() re-reads and re-tokenizes a row's text: only for the hits shown
# (``rowid + 0``: the list is checked on the walk's rows, not looked up one by one).
_SNIPPETS = """
SELECT rowid, memory_id, title,
    snippet(memory_fts, 0, '[', ']', '…', {n}), snippet(memory_fts, 1, '[', ']', '…', {n})
FROM memory_fts WHERE memory_fts MATCH ? AND rowid BETWEEN ? AND ? AND rowid + 0 IN ({rowids})
"""
_RECORDS = "SELECT id, project, session_id, ts FROM {table} WHERE id IN ({marks})"
