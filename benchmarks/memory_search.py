"""Memory search latency at a million observations.

    .venv/bin/python benchmarks/memory_search.py [--observations 1000000] [--db PATH]
    .venv/bin/python benchmarks/memory_search.py --database postgresql+psycopg://... [...]

Builds (once; reused while the file exists and matches ``--observations``) a
database of realistic observations (tools, commands, file paths, errors and
words drawn from Zipf-like vocabularies; 50 projects, ~30 per session) plus one
summary per session, then runs a mix of queries through ``MemoryStore.search``
and prints p50/p90/p99/max per query class and overall.

The fixture is bulk-loaded straight through a sqlite3 connection in big
transactions (the store's schema, migrated by ``Store.open``; index rows made
by the store's own text functions), not through ``MemoryStore.add_observation``
one call at a time: that would take an hour and measure the writer, not search.

With ``--database URL`` the same fixture (same seed, same rows) goes into that
PostgreSQL database instead (migrated by ``Store.open(URL)``, loaded with COPY,
the index's text as the store writes it there, then VACUUM ANALYZE), reused
while it holds ``--observations`` rows, and the same queries run through the
same ``MemoryStore.search``. The database must be
empty or a fixture of this benchmark: ``--rebuild`` empties memory's tables.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from _common import MIB, header, percentile
from agentdeck.core.memory import Observation, SessionSummary
from agentdeck.store import Store
from agentdeck.store.memory import MemoryStore, observation_text, summary_text
from agentdeck.store.memory_search import scope_text
from agentdeck.store.memory_search_pg import index_text
from agentdeck.store.schema import MEMORY_FTS, MEMORY_FTS_DDL

PROJECTS = 50
OBSERVATIONS_PER_SESSION = 33
CHUNK = 50_000
SEED = 5
QUERIES_PER_CLASS = 25
START_TS = 1_750_000_000.0

TOOLS = [
    ("Bash", 35),
    ("Read", 25),
    ("Edit", 14),
    ("Grep", 9),
    ("Glob", 5),
    ("Write", 5),
    ("Task", 3),
    ("WebFetch", 2),
    ("TodoWrite", 2),
]
COMMANDS = [
    "pytest -x",
    "pytest -q tests",
    "uv run pytest",
    "git status",
    "git diff",
    "git log --oneline",
    "git commit -m",
    "npm test",
    "npm run build",
    "make lint",
    "ruff check",
    "mypy src",
    "ls -la",
    "cargo build",
    "cargo test",
    "go test ./...",
    "docker compose up",
    "python -m http.server",
    "alembic upgrade head",
    "curl -s localhost",
]
ERRORS = [
    "AssertionError: assert 0 == 1",
    "ModuleNotFoundError: No module named '{w}'",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    "KeyError: '{w}'",
    "FileNotFoundError: [Errno 2] No such file or directory: '{w}'",
    "error[E0308]: mismatched types",
    "npm ERR! code ERESOLVE",
    "fatal: not a git repository",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "sqlite3.OperationalError: database is locked",
    "TimeoutError: deadline exceeded after 30s",
    "segmentation fault (core dumped)",
]
DIRS = ["src", "tests", "lib", "app", "docs", "scripts", "internal", "pkg", "web", "api"]
EXTS = ["py", "ts", "rs", "go", "md", "toml", "json", "yaml", "sql", "html"]
SYLLABLES = "ka lo mi ne pu ra si to vu we xa yo zu be co da fe gi hu ji".split()  # noqa: SIM905
ENGLISH = (  # noqa: SIM905
    "the test failed passed error warning fixed added removed import module function class "
    "config database query cache server client request response token session agent memory "
    "search index schema migration build deploy release version update install dependency "
    "timeout retry flaky race lock thread async await loop event handler callback parser "
    "router middleware auth login user permission budget cost policy hook summary"
).split()


def zipf_weights(n: int, s: float = 1.1) -> list[float]:
    return [1 / (rank**s) for rank in range(1, n + 1)]


class Vocabulary:
    """Words, paths and projects with Zipf-like frequencies (seeded)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        made = {
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(30_000)
        }
        self.words = ENGLISH + sorted(made - set(ENGLISH))
        rng.shuffle(self.words[len(ENGLISH) :])
        self.word_cum = list(itertools.accumulate(zipf_weights(len(self.words))))
        self.paths = [
            f"{rng.choice(DIRS)}/{rng.choice(self.words[:3000])}/"
            f"{rng.choice(self.words[:8000])}.{rng.choice(EXTS)}"
            for _ in range(20_000)
        ]
        self.path_cum = list(itertools.accumulate(zipf_weights(len(self.paths))))
        self.projects = [f"/home/dev/src/{w}" for w in self.words[200 : 200 + PROJECTS]]
        self.project_cum = list(itertools.accumulate(zipf_weights(PROJECTS, 0.8)))
        self.tool_names = [t for t, _ in TOOLS]
        self.tool_cum = list(itertools.accumulate(w for _, w in TOOLS))

    def sample_words(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.word_cum, k=k)

    def sample_paths(self, k: int) -> list[str]:
        return self.rng.choices(self.paths, cum_weights=self.path_cum, k=k)


def observations(vocab: Vocabulary, total: int) -> Iterator[Observation]:
    rng = vocab.rng
    sessions = max(1, total // OBSERVATIONS_PER_SESSION)
    per_session = total // sessions
    extra = total - per_session * sessions
    n = 0
    for s in range(sessions):
        project = rng.choices(vocab.projects, cum_weights=vocab.project_cum)[0]
        session_id = f"sess-{s:06d}"
        for _ in range(per_session + (1 if s < extra else 0)):
            tool = rng.choices(vocab.tool_names, cum_weights=vocab.tool_cum)[0]
            files = tuple(vocab.sample_paths(rng.choice((0, 1, 1, 2, 3))))
            words = vocab.sample_words(rng.randint(10, 60))
            is_error = rng.random() < 0.08
            if tool == "Bash":
                summary = f"Bash({rng.choice(COMMANDS)} {' '.join(words[:2])})"
            elif files:
                summary = f"{tool}({files[0]})"
            else:
                summary = f"{tool}({' '.join(words[:3])})"
            output = " ".join(words)
            if is_error:
                output = rng.choice(ERRORS).format(w=words[0]) + "\n" + output
            yield Observation(
                id=f"ob{n:012x}",
                project=project,
                session_id=session_id,
                agent_id=None,
                ts=START_TS + n,
                tool=tool,
                input_summary=summary,
                output_excerpt=output,
                files=files,
                is_error=is_error,
            )
            n += 1


Rows = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]


def fixture_rows(total: int) -> Iterator[tuple[str, Rows]]:
    """The fixture in chunks, ``(table, (index rows, record rows))``: rows of
    ``observations`` then of ``summaries``, each with its ``memory_fts`` rows
    (``rowid, title, body, scope, memory_id``); JSON columns as JSON text."""
    vocab = Vocabulary(random.Random(SEED))
    rowid = 0
    last: dict[str, Observation] = {}  # each session's last observation
    first: dict[str, Observation] = {}
    rows = observations(vocab, total)
    while True:
        chunk = list(itertools.islice(rows, CHUNK))
        if not chunk:
            break
        fts, obs = [], []
        for o in chunk:
            rowid += 1
            title, body = observation_text(o)
            fts.append((rowid, title, body, scope_text(o.id, o.project), o.id))
            obs.append(
                (
                    o.id,
                    o.project,
                    o.session_id,
                    o.agent_id,
                    o.ts,
                    o.tool,
                    o.input_summary,
                    o.output_excerpt,
                    json.dumps(list(o.files)),
                    o.is_error,
                    rowid,
                )
            )
            first.setdefault(o.session_id, o)
            last[o.session_id] = o
        yield "observations", (fts, obs)
    rng = vocab.rng
    fts, sums = [], []
    for n, (session_id, o) in enumerate(last.items()):
        rowid += 1
        words = vocab.sample_words(30)
        summary = SessionSummary(
            id=f"su{n:012x}",
            project=o.project,
            session_id=session_id,
            agent_id=None,
            ts=o.ts + 1,
            files_changed=tuple(vocab.sample_paths(3)),
            commands=tuple(rng.sample(COMMANDS, 2)),
            errors=(rng.choice(ERRORS).format(w=words[0]),) if rng.random() < 0.3 else (),
            final_message=" ".join(words[:20]),
            request=f"{first[session_id].input_summary}: " + " ".join(words[20:]),
        )
        title, body = summary_text(summary)
        fts.append((rowid, title, body, scope_text(summary.id, summary.project), summary.id))
        sums.append(
            (
                summary.id,
                summary.project,
                session_id,
                None,
                summary.ts,
                *tuple(json.dumps(list(v)) for v in (summary.files_changed, summary.commands)),
                json.dumps(list(summary.errors)),
                summary.final_message,
                summary.request,
                None,
                rowid,
            )
        )
    yield "summaries", (fts, sums)


def build(db: Path, total: int) -> float:
    """Create the fixture; returns the build time in seconds."""
    started = time.perf_counter()
    asyncio.run(_migrate(db))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    for table, (fts, records) in fixture_rows(total):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memory_fts (rowid, title, body, scope, memory_id) VALUES (?,?,?,?,?)", fts
        )
        marks = ",".join("?" * len(records[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", records)
        conn.execute("COMMIT")
        print(f"  … {fts[-1][0]:,} records", flush=True)
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started


# The columns in the order ``fixture_rows`` gives them.
_COLUMNS = {
    "memory_fts": "rowid, title, body, scope, memory_id",
    "observations": "id, project, session_id, agent_id, ts, tool, input_summary, "
    "output_excerpt, files, is_error, fts_rowid",
    "summaries": "id, project, session_id, agent_id, ts, files_changed, commands, errors, "
    "final_message, request, model_summary, fts_rowid",
}


def build_postgres(url: str, total: int) -> float:
    """The same fixture in a PostgreSQL database, with COPY; returns seconds."""
    import psycopg

    started = time.perf_counter()
    asyncio.run(_migrate(url))
    with psycopg.connect(_libpq(url), autocommit=True) as conn:
        conn.execute("TRUNCATE memory_fts, observations, summaries")
        for table, (fts, records) in fixture_rows(total):
            with conn.transaction(), conn.cursor() as cur:
                indexed = [(r, index_text(t), index_text(b), sc, i) for r, t, b, sc, i in fts]
                for name, rows in (("memory_fts", indexed), (table, records)):
                    with cur.copy(f"COPY {name} ({_COLUMNS[name]}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
            print(f"  … {fts[-1][0]:,} records", flush=True)
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('memory_fts', 'rowid'), max(rowid)) "
            "FROM memory_fts"
        )
        conn.execute("VACUUM ANALYZE memory_fts, observations, summaries")
    return time.perf_counter() - started


def _libpq(url: str) -> str:
    """A SQLAlchemy ``postgresql+psycopg://`` URL as libpq takes it."""
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _migrate(target: Path | str) -> None:
    store = Store.open(target)
    await store.close()


def queries(rng: random.Random, vocab: Vocabulary) -> dict[str, list[str]]:
    common = ENGLISH[:25] + ["pytest", "bash", "src", "py", "tests", "git"]
    rare = vocab.words[8000:30000]
    mid = vocab.words[100:2000]
    return {
        "rare term": rng.sample(rare, QUERIES_PER_CLASS),
        "common term": [rng.choice(common) for _ in range(QUERIES_PER_CLASS)],
        "two words": [
            f"{rng.choice(common)} {rng.choice(mid + rare)}" for _ in range(QUERIES_PER_CLASS)
        ],
        "prefix": [
            rng.choice(mid + common)[: rng.choice((3, 4, 5))] + "*"
            for _ in range(QUERIES_PER_CLASS)
        ],
    }


async def measure(target: Path | str, seed: int) -> dict[str, list[float]]:
    vocab = Vocabulary(random.Random(SEED))
    rng = random.Random(seed)
    classes = queries(rng, vocab)
    store = Store.open(target)
    memory = MemoryStore(store)
    timings: dict[str, list[float]] = {}
    try:
        for name, texts in classes.items():
            for with_project in (False, True):
                label = f"{name}{' + project' if with_project else ''}"
                for text in texts:
                    project = rng.choice(vocab.projects) if with_project else None
                    started = time.perf_counter()
                    await memory.search(text, project=project, limit=10)
                    timings.setdefault(label, []).append((time.perf_counter() - started) * 1000)
    finally:
        await store.close()
    return timings


def report(timings: dict[str, list[float]]) -> None:
    print(f"  {'query class':<26}{'n':>5}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}  (ms)")
    everything = [t for ts in timings.values() for t in ts]
    for label, values in [*timings.items(), ("overall", everything)]:
        cells = "".join(f"{percentile(values, q):>9.2f}" for q in (50, 90, 99, 100))
        print(f"  {label:<26}{len(values):>5}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="fixture path (kept and reused)")
    parser.add_argument(
        "--database",
        metavar="URL",
        help="a PostgreSQL database (postgresql+psycopg://...) to hold the fixture instead",
    )
    parser.add_argument("--rebuild", action="store_true", help="build the fixture afresh")
    parser.add_argument("--seed", type=int, default=1, help="which queries are drawn")
    args = parser.parse_args()
    target: Path | str
    if args.database:
        target = args.database
        where = sa.make_url(args.database).render_as_string(hide_password=True)
        header(f"memory search: {args.observations:,} observations, PostgreSQL {where}")
        if args.rebuild or not _pg_fixture_ok(args.database, args.observations):
            print("  building (COPY into the migrated database)")
            print(f"  built in {build_postgres(args.database, args.observations):.0f} s")
        else:
            print("  reusing the database's fixture (--rebuild to build afresh)")
        n_obs, n_sum, size = _pg_counts(args.database)
    else:
        db = args.db or Path(tempfile.gettempdir()) / f"agentdeck-memory-{args.observations}.db"
        target = db
        header(f"memory search: {args.observations:,} observations")
        if args.rebuild or not _fixture_ok(db, args.observations):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            print(f"  building {db} (bulk insert through sqlite3, big transactions)")
            seconds = build(db, args.observations)
            print(f"  built in {seconds:.0f} s")
        else:
            print(f"  reusing {db} (--rebuild to build afresh)")
        counts = sqlite3.connect(db).execute(
            "SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM summaries)"
        )
        n_obs, n_sum = counts.fetchone()
        size = db.stat().st_size
    print(f"  {n_obs:,} observations, {n_sum:,} summaries; database {size / MIB:,.0f} MiB")
    asyncio.run(measure(target, args.seed + 1000))  # warm the page cache and the pool
    timings = asyncio.run(measure(target, args.seed))
    report(timings)


def _pg_counts(url: str) -> tuple[int, int, int]:
    import psycopg

    with psycopg.connect(_libpq(url)) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM summaries), "
            "pg_database_size(current_database())"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _pg_fixture_ok(url: str, total: int) -> bool:
    import psycopg

    try:
        with psycopg.connect(_libpq(url)) as conn:
            row = conn.execute("SELECT count(*) FROM observations").fetchone()
    except psycopg.Error:
        return False
    return row is not None and row[0] == total


def _fixture_ok(db: Path, total: int) -> bool:
    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(db)
        try:
            (ddl,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (MEMORY_FTS,)
            ).fetchone()
            (count,) = conn.execute("SELECT count(*) FROM observations").fetchone()
            return bool(ddl == MEMORY_FTS_DDL and count == total)
        finally:
            conn.close()
    except (sqlite3.Error, TypeError):
        return False


if __name__ == "__main__":
    main()
