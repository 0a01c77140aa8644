"""The dialect seam: what differs between SQLite and PostgreSQL lives behind it.

``dialect_sqlite`` (a file in the home: WAL, ``BEGIN IMMEDIATE``, PRAGMAs) and
``dialect_postgres`` (a ``postgresql+psycopg://`` URL: a pool, an advisory write
lock, reconnects) each give an engine for the writer and one for the reads, the
hot event insert and an integrity check; this module picks one by the target
(``Path`` or URL) or by the connection's dialect. The rest of the store, and
everything outside it, is portable SQLAlchemy Core and never asks which it is.

Where a feature truly differs, the backend says so: the disk-full reserve
(``store.reserve``) and the CLI's quick reads (``store.peek``) are SQLite's only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from agentdeck.settings_database import is_database_url
from agentdeck.store import dialect_sqlite
from agentdeck.store.dialect_sqlite import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS

Target = Path | str  # a SQLite file, or a PostgreSQL URL

# Table options: AUTOINCREMENT on SQLite so an id is never reused, even after
# deletes (a PostgreSQL sequence never gives one twice anyway).
TABLE_KWARGS: dict[str, Any] = {"sqlite_autoincrement": True}
# An id the database allocates: INTEGER (the rowid) on SQLite, bigint on PostgreSQL.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class JSONDocument(sa.types.TypeDecorator[Any]):
    """A JSON column: JSON text on SQLite, ``jsonb`` on PostgreSQL. (Not
    ``with_variant``: that loads SQLAlchemy's PostgreSQL dialect, ~50 ms, into
    every command that opens a SQLite store.)"""

    impl = sa.JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(sa.JSON())


JSON = JSONDocument()


def is_postgres(target: Target) -> bool:
    return is_database_url(target)


def database_url(target: Target) -> sa.URL | str:
    if is_postgres(target):
        return str(target)
    return dialect_sqlite.database_url(Path(target))


def create_engine(target: Target, *, writer: bool) -> Engine:
    """An engine for the write connection (``writer=True``) or the read pool."""
    if is_postgres(target):
        from agentdeck.store import dialect_postgres

        return dialect_postgres.create_engine(str(target), writer=writer)
    return dialect_sqlite.create_engine(Path(target), writer=writer)


def _pg(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def insert_returning_ids(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]
) -> list[int]:
    """Insert ``rows`` (integer ``id`` allocated by the database) and return the
    ids, in the order of ``rows``."""
    if _pg(conn):
        from agentdeck.store import dialect_postgres

        return dialect_postgres.insert_returning_ids(conn, table, rows)
    return dialect_sqlite.insert_returning_ids(conn, table, rows)


def integrity_check(conn: Connection, tables: Sequence[sa.Table]) -> str:
    """``"ok"``, or the problems found, one per line (``tables``: the schema's)."""
    if _pg(conn):
        from agentdeck.store import dialect_postgres

        return dialect_postgres.integrity_check(conn, tables)
    return dialect_sqlite.integrity_check(conn)


def is_busy_error(exc: BaseException) -> bool:
    """SQLite's write lock was held longer than ``busy_timeout``."""
    return dialect_sqlite.is_busy_error(exc)


def is_disconnect(exc: BaseException) -> bool:
    """PostgreSQL's connection was lost or cannot be made now (never on SQLite)."""
    orig = getattr(exc, "orig", None)
    if not type(orig).__module__.startswith("psycopg"):
        return False
    from agentdeck.store import dialect_postgres

    return dialect_postgres.is_disconnect(exc)


class time_bucket(FunctionElement[Any]):
    """``time_bucket(ts, seconds)``: the start of the ``seconds``-long bucket ``ts``
    (epoch seconds) falls in. SQLite's CAST truncates, the floor for the positive
    times we hold; PostgreSQL's CAST rounds, so it gets ``floor``."""

    name = "time_bucket"
    inherit_cache = True

    def __init__(self, ts: sa.ColumnElement[Any], seconds: int) -> None:
        super().__init__(ts, sa.literal(seconds, sa.Integer))


@compiles(time_bucket)
def _time_bucket_sqlite(element: time_bucket, compiler: SQLCompiler, **kw: Any) -> str:
    ts, seconds = list(element.clauses)
    return compiler.process(sa.cast(ts / seconds, sa.Integer) * seconds, **kw)


@compiles(time_bucket, "postgresql")
def _time_bucket_pg(element: time_bucket, compiler: SQLCompiler, **kw: Any) -> str:
    ts, seconds = list(element.clauses)
    return compiler.process(sa.func.floor(ts / seconds) * seconds, **kw)


class json_number(FunctionElement[Any]):
    """A number in a JSON object column, 0 when absent."""

    name = "json_number"
    inherit_cache = True

    def __init__(self, column: sa.ColumnElement[Any], key: str) -> None:
        super().__init__(column, sa.literal(key, sa.Text))


@compiles(json_number)
def _json_number_sqlite(element: json_number, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = list(element.clauses)
    path = "$." + str(key.value)
    value = sa.cast(sa.func.json_extract(column, path), sa.Float)
    return compiler.process(sa.func.coalesce(value, 0.0), **kw)


@compiles(json_number, "postgresql")
def _json_number_pg(element: json_number, compiler: SQLCompiler, **kw: Any) -> str:
    column, key = list(element.clauses)
    value = sa.cast(sa.func.jsonb_extract_path_text(column, key), sa.Float)
    return compiler.process(sa.func.coalesce(value, 0.0), **kw)
