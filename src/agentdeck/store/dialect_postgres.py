"""The PostgreSQL side of the dialect seam (``store.dialect`` chooses it for a URL).

psycopg 3 through SQLAlchemy, as on SQLite one writer thread per process with its
own connection and a pool of read connections:

- Reads run ``REPEATABLE READ, READ ONLY``: one snapshot per read, as SQLite's
  deferred ``BEGIN`` gives, and no read can write.
- Writes run ``READ COMMITTED`` and every write transaction first takes one
  transaction-scoped advisory lock, ``pg_advisory_xact_lock(WRITE_LOCK)``: the
  part SQLite's ``BEGIN IMMEDIATE`` plays. It makes the store's read-then-write
  steps (an agent's upsert, the audit chain's head, ``amend_extra``) atomic across
  processes and hosts, and it keeps **event ids in commit order**. Without it two
  writers draw ids from the sequence, 7 then 8, and 8 may commit first: a reader
  that has read up to 8 never asks for 7 again, so it misses it for good (the
  sequence-gap problem). Under the lock the transaction that draws an id commits
  (and releases the lock) before any other draws the next, so a reader resuming
  after id N never later sees a committed id below N. Writes are batched, so the
  lock is taken once per batch, not per event.
- Connections are checked with a ping when taken from a pool (a server restart
  costs a reconnect, not an error); the writer retries a batch on a lost connection
  (``store.writer``).
- No disk-full reserve (``store.reserve`` is SQLite's): the server manages its disk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from agentdeck.errors import StoreError
from agentdeck.settings_database import POSTGRES_EXTRA

# Arbitrary, constant, ours: "agentdeck" in ASCII, folded into a bigint.
WRITE_LOCK = 0x6167656E746465
CONNECT_TIMEOUT_SECONDS = 10
READ_POOL_SIZE = 8
READ_POOL_OVERFLOW = 32

_dumps = partial(json.dumps, separators=(",", ":"), ensure_ascii=False)
# ``\u0000`` preceded by an even number of backslashes: a NUL that jsonb refuses.
_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _json_dumps(value: Any) -> str:
    """JSON for ``jsonb``, which holds neither NUL nor a lone surrogate: each
    becomes U+FFFD instead of failing the whole batch (as on SQLite)."""
    text = _dumps(value)
    if "\\u0000" in text:
        text = _NUL.sub(lambda m: m.group(1) + "\ufffd", text)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# How long a writer may sit idle inside its transaction (ms): a batch's transaction
# never waits on anything but the database, so only a stopped process reaches it.
WRITER_IDLE_MS = 5000


def take_write_lock(conn: Connection) -> None:
    """Serialise this write transaction with every other (see the module's doc)."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")


def create_engine(url: str, *, writer: bool) -> Engine:
    """An engine for the write connection (``writer=True``) or the read pool."""
    try:
        import psycopg  # noqa: F401 - only to say clearly that it is missing
    except ImportError:
        raise StoreError(
            "a PostgreSQL store needs psycopg 3, which is not installed",
            hint=f"{POSTGRES_EXTRA}, or unset AGENTDECK_DATABASE_URL to use SQLite",
        ) from None
    # A writer holds the deck's write lock for the length of its transaction: one
    # whose process stopped mid-transaction (SIGSTOP, a frozen VM) would hold every
    # other writer of every host. PostgreSQL ends such a session after a while, its
    # lock released; the stopped host finds its connection gone when it comes back.
    options = (
        f"-c idle_in_transaction_session_timeout={WRITER_IDLE_MS}"
        if writer
        else "-c default_transaction_read_only=on"
    )
    engine = sa.create_engine(
        url,
        json_serializer=_json_dumps,
        pool_size=1 if writer else READ_POOL_SIZE,
        max_overflow=0 if writer else READ_POOL_OVERFLOW,
        pool_pre_ping=True,
        isolation_level="READ COMMITTED" if writer else "REPEATABLE READ",
        connect_args={
            "connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "application_name": "agentdeck-writer" if writer else "agentdeck",
            "options": options,
        },
    )
    if writer:

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            take_write_lock(conn)

    return engine


def insert_returning_ids(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Insert ``rows`` and return their ids in the order of ``rows``.

    The hot path of the event log, so (as on SQLite) it skips SQLAlchemy's per-row
    processing: the ids are drawn from the table's sequence first, in one query
    (in the order of ``rows``; consecutive under the write lock, unique in any
    case), then the rows go in with them in one pipelined ``executemany`` (JSON
    columns dumped here; the server reads them as ``jsonb``)."""
    if not rows:
        return []
    ids = [
        int(i)
        for i in conn.exec_driver_sql(
            f"SELECT nextval(pg_get_serial_sequence('{table.name}', 'id')) "
            f"FROM generate_series(1, {len(rows)}) ORDER BY 1"
        ).scalars()
    ]
    names = list(rows[0])
    json_cols = {c.name for c in table.c if isinstance(getattr(c.type, "impl", c.type), sa.JSON)}
    params = [
        (i, *(_json_dumps(row[n]) if n in json_cols else row[n] for n in names))
        for i, row in zip(ids, rows, strict=True)
    ]
    sql = "INSERT INTO {} (id, {}) VALUES ({})".format(
        table.name, ", ".join(names), ", ".join(["%s"] * (len(names) + 1))
    )
    conn.exec_driver_sql(sql, params)
    return ids


def integrity_check(conn: Connection, tables: Sequence[sa.Table]) -> str:
    """PostgreSQL keeps its own files sound (no PRAGMA integrity_check): what is
    checked here is what the store relies on. ``"ok"``, or one problem per line:
    a table of the schema missing, or an id sequence behind the largest id in its
    table (the next insert would fail or reuse an id). ``tables``: the schema's
    (passed in: the schema is built on this module's types)."""
    problems: list[str] = []
    present = set(sa.inspect(conn).get_table_names())
    for table in tables:
        if table.name not in present:
            problems.append(f"table {table.name} is missing")
            continue
        id_col = table.c.get("id")
        if id_col is None or not isinstance(id_col.type, sa.Integer):
            continue
        seq = conn.execute(
            sa.text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table.name}
        ).scalar()
        if seq is None:
            continue
        last = conn.execute(sa.text(f"SELECT last_value, is_called FROM {seq}")).one()
        top = conn.execute(sa.select(sa.func.coalesce(sa.func.max(id_col), 0))).scalar_one()
        allocated = int(last[0]) if last[1] else int(last[0]) - 1
        if allocated < int(top):
            problems.append(f"{seq} is at {allocated}, behind the largest id {top} of {table.name}")
    return "\n".join(problems) or "ok"


_LOST = {"57P01", "57P02", "57P03"}  # admin/crash shutdown, cannot connect now


def is_disconnect(exc: BaseException) -> bool:
    """The connection to the server was lost or could not be made (a restart, a
    network failure): the work may be tried again once it is back."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", exc)
    try:
        import psycopg
    except ImportError:
        return False
    if not isinstance(orig, psycopg.OperationalError):
        return False
    state = getattr(orig, "sqlstate", None)
    return state is None or state.startswith("08") or state in _LOST
