"""What ``store.copy`` copies, and the two ends it copies between.

The tables are discovered, never listed: every table of ``schema.metadata`` plus
the full-text table (outside the metadata). A table the copier cannot copy
faithfully (no primary key, a column type it does not know) raises here, so a
schema change that needs the copier's attention fails its test at once instead
of copying wrongly. The source is opened read-only; every check that can refuse
runs before anything is written.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from agentdeck.errors import StoreError, UsageError
from agentdeck.settings_database import hide_password, normalise
from agentdeck.store import migrate
from agentdeck.store.schema import MEMORY_FTS, is_index_table, metadata

# Column types whose values go from SQLite to PostgreSQL unchanged through
# SQLAlchemy; any other type needs a thought first.
_KNOWN_TYPES = (sa.Text, sa.String, sa.Integer, sa.Float, sa.Boolean, sa.JSON)

# Tables SQLite or Alembic keep for themselves: not data.
_BOOKKEEPING = frozenset({"alembic_version", "sqlite_sequence"})

# The full-text rows as data: ``rowid`` is what ``observations.fts_rowid`` and
# ``summaries.fts_rowid`` point at, so it is copied as it is.
memory_fts = sa.Table(
    MEMORY_FTS,
    sa.MetaData(),
    sa.Column("rowid", sa.BigInteger, primary_key=True, autoincrement=True),
    sa.Column("title", sa.Text),
    sa.Column("body", sa.Text),
    sa.Column("scope", sa.Text),
    sa.Column("memory_id", sa.Text),
)


@dataclass(frozen=True)
class TablePlan:
    """How one table is copied: keyset pages in primary-key order."""

    table: sa.Table

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def key(self) -> tuple[sa.Column[Any], ...]:
        return tuple(self.table.primary_key.columns)

    @property
    def serial(self) -> sa.Column[Any] | None:
        """The id the database allocates (a sequence on PostgreSQL), if any."""
        key = self.key
        if len(key) == 1 and isinstance(key[0].type, sa.Integer) and key[0].autoincrement:
            return key[0]
        return None

    def key_of(self, row: Any) -> tuple[Any, ...]:
        return tuple(row[c.name] for c in self.key)


def plan(tables: Sequence[sa.Table] | None = None) -> list[TablePlan]:
    """Every table to copy, parents before children; ``StoreError`` naming a table
    the copier does not know how to copy."""
    chosen = list(metadata.sorted_tables) if tables is None else list(tables)
    plans = []
    for table in [*chosen, memory_fts] if tables is None else chosen:
        if not table.primary_key.columns:
            raise StoreError(f"the copier does not know how to copy table {table.name}: no key")
        for column in table.c:
            if not isinstance(base_type(column), _KNOWN_TYPES):
                raise StoreError(
                    f"the copier does not know how to copy {table.name}.{column.name} "
                    f"({column.type!r})"
                )
        plans.append(TablePlan(table))
    return plans


def raw_pages(conn: Connection, plan: TablePlan, limit: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows as tuples in column order, JSON as the text it is stored as (what
    ``COPY`` takes), a page at a time in key order."""
    columns = [sa.type_coerce(c, sa.Text) if is_json(c) else c for c in plan.table.c]
    at = [list(plan.table.c).index(c) for c in plan.key]
    after: tuple[Any, ...] | None = None
    while True:
        stmt = sa.select(*columns)
        if after is not None:
            stmt = stmt.where(sa.tuple_(*plan.key) > sa.tuple_(*after))
        rows = [tuple(r) for r in conn.execute(stmt.order_by(*plan.key).limit(limit))]
        if not rows:
            return
        yield rows
        after = tuple(rows[-1][i] for i in at)


# PostgreSQL's text and jsonb hold no NUL character, which a tool's output may
# carry: the store on PostgreSQL drops it from text (``memory_search_pg.storable``)
# and writes it as U+FFFD in JSON (``dialect_postgres``); the copy does the same.
# ``\u0000`` preceded by an even number of backslashes is a NUL in JSON text.
_JSON_NUL = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def storable(plan: TablePlan, rows: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], int]:
    """The rows as PostgreSQL can hold them, and how many values that changed."""
    if plan.name == MEMORY_FTS:
        rows = _as_indexed(plan, rows)
    json_at = {i for i, c in enumerate(plan.table.c) if is_json(c)}
    changed = 0
    out = []
    for row in rows:
        if not any(isinstance(v, str) and ("\x00" in v or "\\u0000" in v) for v in row):
            out.append(row)
            continue
        values = list(row)
        for i, value in enumerate(row):
            if not isinstance(value, str):
                continue
            if i in json_at:
                values[i] = _JSON_NUL.sub(lambda m: m.group(1) + "\ufffd", value)
            else:
                values[i] = value.replace("\x00", "")
            changed += values[i] != value
        out.append(tuple(values))
    return out, changed


def _as_indexed(plan: TablePlan, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Memory's index rows as the store on PostgreSQL writes them: the title and
    body with the separator after each punctuation mark (``index_text``: the words
    of a path or an address are words there, as in FTS5)."""
    from agentdeck.store.memory_search_pg import index_text

    names = [c.name for c in plan.table.c]
    texts = {names.index("title"), names.index("body")}
    return [
        tuple(index_text(v) if i in texts and isinstance(v, str) else v for i, v in enumerate(r))
        for r in rows
    ]


def base_type(column: sa.Column[Any]) -> sa.types.TypeEngine[Any]:
    """The column's type under any ``TypeDecorator`` (the store's ``JSONDocument``)."""
    kind: sa.types.TypeEngine[Any] = column.type
    while isinstance(kind, sa.types.TypeDecorator):
        kind = kind.impl_instance
    return kind


def is_json(column: sa.Column[Any]) -> bool:
    return isinstance(base_type(column), sa.JSON)


def count(conn: Connection, table: sa.Table) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


# --- the source: a SQLite file, read-only, one snapshot ---------------------------


def open_source(db_path: Path) -> Engine:
    """A read-only engine on the home's database, after the checks that refuse
    a file that is missing, empty, not SQLite, damaged, or not at head."""
    db_path = Path(db_path).expanduser().absolute()
    if not db_path.is_file():
        raise StoreError(
            f"no database at {db_path}: nothing to copy",
            hint="set AGENTDECK_HOME to the home whose deck you mean to copy",
        )
    if db_path.stat().st_size == 0:
        raise StoreError(f"the database {db_path} is empty: nothing to copy")
    uri = f"file:{quote(str(db_path))}?mode=ro"

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.isolation_level = None  # we BEGIN ourselves: one snapshot for the copy
        return conn

    engine = sa.create_engine("sqlite+pysqlite://", creator=connect, poolclass=sa.pool.StaticPool)
    sa.event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
    try:
        with engine.begin() as conn:
            problems = conn.exec_driver_sql("PRAGMA quick_check").scalars().all()
            if [str(p) for p in problems] != ["ok"]:
                raise StoreError(
                    f"the database {db_path} is damaged: {'; '.join(map(str, problems[:3]))}",
                    hint="`agentdeck doctor` says more; nothing was copied",
                )
            revision = migrate.current_revision(conn)
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot read the database {db_path}: {exc.orig}",
            hint="is it an agentdeck database? nothing was copied",
        ) from exc
    except StoreError:
        engine.dispose()
        raise
    if revision != migrate.HEAD:
        engine.dispose()
        if revision is None:
            raise StoreError(f"{db_path} holds no agentdeck database: nothing to copy")
        raise StoreError(
            f"the database {db_path} is at schema revision {revision}, this agentdeck's is "
            f"{migrate.HEAD}",
            hint="open it once with this version (e.g. `agentdeck ls`) to migrate it, then copy",
        )
    return engine


def unknown_tables(conn: Connection, plans: Sequence[TablePlan]) -> list[str]:
    """Tables in the source that are neither planned nor bookkeeping."""
    names = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).scalars()
    planned = {p.name for p in plans}
    return sorted(
        n for n in names if n not in planned and n not in _BOOKKEEPING and not is_index_table(n)
    )


def largest_ids(conn: Connection) -> dict[str, int]:
    """SQLite's largest id ever given per AUTOINCREMENT table (above max(id) after a delete)."""
    rows = conn.exec_driver_sql("SELECT name, seq FROM sqlite_sequence").all()
    return {str(name): int(seq) for name, seq in rows}


# --- the target: PostgreSQL at head -------------------------------------------------


def target_url(url: str) -> str:
    """The PostgreSQL URL as the store takes it (``settings_database.normalise``:
    psycopg 3 named); ``UsageError`` naming the accepted forms otherwise, never
    echoing the URL: it may hold a password."""
    try:
        return normalise(url)
    except ValueError as exc:
        raise UsageError(f"--to: {exc}") from None


def shown(url: str) -> str:
    return hide_password(url)


def open_target(url: str) -> Engine:
    """The store's own write engine on the target (``dialect_postgres``: each of
    its transactions takes the deck's write lock first, so no deck writes there
    while the copy runs), connected once (``StoreError`` when it cannot be)."""
    from agentdeck.store import dialect_postgres

    engine = dialect_postgres.create_engine(url, writer=True)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot reach {shown(url)}: {reason(exc, url)}",
            hint="check the host, port, database and credentials; nothing was copied",
        ) from exc
    return engine


def check_target_schema(conn: Connection, url: str, plans: Sequence[TablePlan]) -> bool:
    """True when the target holds no tables at all (the schema is to be created);
    else it must be at this agentdeck's revision with every planned table."""
    inspector = sa.inspect(conn)
    names = set(inspector.get_table_names())
    revision = migrate.current_revision(conn)
    if revision is None and not names:
        return True
    if revision != migrate.HEAD:
        raise StoreError(
            f"{shown(url)} is at schema revision {revision or 'none (other tables)'}, "
            f"this agentdeck's is {migrate.HEAD}",
            hint="copy into an empty database, or one this version created; nothing was copied",
        )
    missing = sorted(p.name for p in plans if p.name not in names)
    if missing:
        raise StoreError(
            f"{shown(url)} lacks the tables {', '.join(missing)}",
            hint="copy into an empty database; nothing was copied",
        )
    return False


def reason(exc: BaseException, url: str | None = None) -> str:
    """The database's own words, first line, with any password taken out."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    password = _password(url) if url is not None else None
    if password:
        first = first.replace(password, "***").replace(quote(password, safe=""), "***")
    return first


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None
