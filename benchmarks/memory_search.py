"""Memory search latency at a million observations.

    .venv/bin/python benchmarks/memory_search.py [--observations 1000000] [--db PATH]

Builds (once; reused while the file exists and matches ``--observations``) a
database of realistic observations (tools, commands, file paths, errors and
words drawn from Zipf-like vocabularies; 50 projects, ~30 per session) plus one
summary per session, then runs a mix of queries through ``MemoryStore.search``
and prints p50/p90/p99/max per query class and overall.

The fixture is bulk-loaded straight through a sqlite3 connection in big
transactions (the store's schema, migrated by ``Store.open``; index rows made
by the store's own text functions), not through ``MemoryStore.add_observation``
one call at a time: that would take an hour and measure the writer, not search.
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

from _common import MIB, header, percentile
from agentdeck.core.memory import Observation, SessionSummary
from agentdeck.store import Store
from agentdeck.store.memory import MemoryStore, observation_text, summary_text
from agentdeck.store.memory_search import scope_text
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


def build(db: Path, total: int) -> float:
    """Create the fixture; returns the build time in seconds."""
    started = time.perf_counter()
    asyncio.run(_migrate(db))
    vocab = Vocabulary(random.Random(SEED))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    rowid = 0
    last: dict[str, Observation] = {}  # each session's last observation
    first: dict[str, Observation] = {}
    rows = observations(vocab, total)
    while True:
        chunk = list(itertools.islice(rows, CHUNK))
        if not chunk:
            break
        conn.execute("BEGIN")
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
        conn.executemany(
            "INSERT INTO memory_fts (rowid, title, body, scope, memory_id) VALUES (?,?,?,?,?)", fts
        )
        conn.executemany("INSERT INTO observations VALUES (?,?,?,?,?,?,?,?,?,?,?)", obs)
        conn.execute("COMMIT")
        print(f"  … {rowid:,} observations", flush=True)
    conn.execute("BEGIN")
    rng = vocab.rng
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
        conn.execute(
            "INSERT INTO memory_fts (rowid, title, body, scope, memory_id) VALUES (?,?,?,?,?)",
            (rowid, title, body, scope_text(summary.id, summary.project), summary.id),
        )
        conn.execute(
            "INSERT INTO summaries VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
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
            ),
        )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - started


async def _migrate(db: Path) -> None:
    store = Store.open(db)
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


async def measure(db: Path, seed: int) -> dict[str, list[float]]:
    vocab = Vocabulary(random.Random(SEED))
    rng = random.Random(seed)
    classes = queries(rng, vocab)
    store = Store.open(db)
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
    parser.add_argument("--rebuild", action="store_true", help="build the fixture afresh")
    parser.add_argument("--seed", type=int, default=1, help="which queries are drawn")
    args = parser.parse_args()
    db = args.db or Path(tempfile.gettempdir()) / f"agentdeck-memory-{args.observations}.db"
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
    print(
        f"  {n_obs:,} observations, {n_sum:,} summaries; "
        f"database {db.stat().st_size / MIB:,.0f} MiB"
    )
    asyncio.run(measure(db, args.seed + 1000))  # warm the page cache and the pool
    timings = asyncio.run(measure(db, args.seed))
    report(timings)


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
