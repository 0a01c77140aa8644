"""The SQLite side of the dialect seam (``store.dialect`` chooses it for a file).

The rest of the store is portable SQLAlchemy Core. SQLite gets:

- WAL journal, ``synchronous=NORMAL`` (durable at checkpoint, never corrupt),
  a ``busy_timeout`` so a second process waits for the write lock instead of
  failing, and foreign keys on.
- Explicit transactions: pysqlite's own implicit ``BEGIN`` handling is switched
  off and we emit ``BEGIN IMMEDIATE`` for the write engine (take the write lock
  up front, so two writers queue on ``busy_timeout`` rather than deadlocking on
  a lock upgrade) and a plain deferred ``BEGIN`` for readers (a consistent
  snapshot per read).
- Read connections are ``query_only``: the writer thread is the only writer.
- Event inserts: one DBAPI ``executemany`` (a RETURNING insert sorted by
  parameter order degrades to one statement per row on SQLite), ids read back
  under the write lock: see ``insert_returning_ids``.

The PostgreSQL side is ``dialect_postgres``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

BUSY_TIMEOUT_MS = 30_000

_dumps = partial(json.dumps, separators=(",", ":"), ensure_ascii=False)


def _json_dumps(value: Any) -> str:
    """JSON as UTF-8 text. A lone surrogate (JSON may carry ``\\ud800``; SQLite
    cannot store it) becomes U+FFFD instead of failing the whole batch."""
    text = _dumps(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def database_url(db_path: Path) -> sa.URL:
    return sa.URL.create("sqlite+pysqlite", database=str(db_path))


def _configure(dbapi_conn: sqlite3.Connection, *, writer: bool) -> None:
    # We issue BEGIN ourselves (see the "begin" listener).
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    try:
        if writer:
            # Persistent for the file; fails with "file is not a database" early.
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        if not writer:
            cur.execute("PRAGMA query_only=ON")
    finally:
        cur.close()


# Reads run in anyio worker threads (40 by default): up to as many connections,
# so a reader never waits on the pool; 8 stay open between bursts.
READ_POOL_SIZE = 8
READ_POOL_OVERFLOW = 32


def create_engine(db_path: Path, *, writer: bool) -> Engine:
    """An engine for the write connection (``writer=True``) or the read pool."""
    engine = sa.create_engine(
        database_url(db_path),
        json_serializer=_json_dumps,
        pool_size=1 if writer else READ_POOL_SIZE,
        max_overflow=0 if writer else READ_POOL_OVERFLOW,
        connect_args={"check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        _configure(dbapi_conn, writer=writer)

    begin = "BEGIN IMMEDIATE" if writer else "BEGIN"

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql(begin)

    return engine


def insert_returning_ids(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Insert ``rows`` into ``table`` (integer AUTOINCREMENT ``id``) and return
    the ids the database gave them, in the order of ``rows``.

    The hot path of the event log, so it skips SQLAlchemy's per-row parameter
    processing: one DBAPI ``executemany`` (JSON columns dumped here, compact).
    Inside our ``BEGIN IMMEDIATE`` transaction no other connection can write,
    and AUTOINCREMENT gives each new row ``max(largest id ever, max(id)) + 1``,
    so the rows get consecutive ids in parameter order, the last of which is
    ``last_insert_rowid()``.
    """
    if not rows:
        return []
    names = list(rows[0])
    json_cols = {c.name for c in table.c if isinstance(getattr(c.type, "impl", c.type), sa.JSON)}
    params = [
        tuple(_json_dumps(row[n]) if n in json_cols else row[n] for n in names) for row in rows
    ]
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        table.name, ", ".join(names), ", ".join("?" * len(names))
    )
    conn.exec_driver_sql(sql, params)
    last = int(conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one())
    return list(range(last - len(rows) + 1, last + 1))


def integrity_check(conn: Connection) -> str:
    """``"ok"`` or SQLite's list of problems, one per line."""
    rows = conn.exec_driver_sql("PRAGMA integrity_check").scalars().all()
    return "\n".join(str(r) for r in rows)


def is_busy_error(exc: BaseException) -> bool:
    """The write lock was held longer than ``busy_timeout``."""
    orig = getattr(exc, "orig", exc)
    return isinstance(orig, sqlite3.OperationalError) and "locked" in str(orig)
