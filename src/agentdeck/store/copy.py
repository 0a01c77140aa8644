"""Copy a home's SQLite database into PostgreSQL (``agentdeck db migrate --to``).

Every table of the schema (``copy_plan.plan``), in pages of ``batch`` rows in
key order, ids as they are (an SSE client resumes after an event id on the new
store as on the old), the PostgreSQL sequences set past the largest id after.

One snapshot, one transaction: the source is read in a single read transaction
(a consistent copy even if something writes to the file meanwhile), and the
target is written in one transaction that also runs the checks (every table's
count equals the source's, the audit chain verifies and ends at the source's
head) before it commits. So a copy is whole or absent, never half-written.

Run twice, nothing is copied twice: rows go in with ``ON CONFLICT DO NOTHING`` on
the key. A target that already holds rows must hold THIS deck's rows: each page
is compared in PostgreSQL with the target's rows of the same keys before it is
inserted, and a row that differs, or a row the source lacks (another deck's data,
or this home changed since it was copied), refuses the copy: the transaction is
rolled back, so nothing it wrote is ever seen.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.audit import ChainVerifier, VerifyResult
from agentdeck.errors import StoreError
from agentdeck.store import audit as audit_rows
from agentdeck.store import copy_plan, migrate
from agentdeck.store.copy_plan import TablePlan

BATCH_ROWS = 5000


@dataclass(frozen=True)
class TableCopied:
    """One table: rows ``copied`` now, ``present`` already in the target, ``total``
    in the source (and so in the target after)."""

    table: str
    copied: int
    present: int
    total: int
    # Values that held a NUL character, which PostgreSQL cannot: dropped from
    # text, U+FFFD in JSON (as the store does on PostgreSQL).
    cleaned: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "copied": self.copied,
            "present": self.present,
            "total": self.total,
            "cleaned": self.cleaned,
        }


@dataclass(frozen=True)
class CopyReport:
    source: str
    target: str  # password hidden
    created_schema: bool
    tables: tuple[TableCopied, ...]
    audit: VerifyResult
    seconds: float

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.tables)

    @property
    def rows_per_second(self) -> float:
        return self.copied / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "created_schema": self.created_schema,
            "tables": [t.to_dict() for t in self.tables],
            "copied": self.copied,
            "audit": self.audit.to_dict(),
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
        }


def copy_database(
    source: Path,
    url: str,
    *,
    batch: int = BATCH_ROWS,
    on_table: Callable[[TableCopied], None] | None = None,
) -> CopyReport:
    """Copy the database at ``source`` into the PostgreSQL database at ``url``.

    Raises ``UsageError`` for a URL that is not PostgreSQL's, ``StoreError`` for a
    source that is missing, empty, damaged or at another revision, a target that
    cannot be reached, is at another revision, or holds another deck's data, and
    for a copy whose checks fail; in every case nothing is written.
    """
    if batch < 1:
        raise ValueError("batch must be at least 1")
    started = time.monotonic()
    target_url = copy_plan.target_url(url)
    plans = copy_plan.plan()
    src_engine = copy_plan.open_source(source)
    try:
        dst_engine = copy_plan.open_target(target_url)
        try:
            created = _prepare(dst_engine, target_url, plans)
            with src_engine.begin() as src, dst_engine.begin() as dst:
                source_chain = _check_source(src, source, plans)
                tables = _copy(src, dst, plans, batch, target_url, on_table)
                _set_sequences(src, dst, plans)
                chain = _check(dst, tables, source_chain, target_url)
        except sa.exc.DBAPIError as exc:
            where = (
                f"reading {source}"
                if isinstance(exc.orig, sqlite3.Error)
                else f"the copy into {copy_plan.shown(target_url)}"
            )
            raise StoreError(
                f"{where} failed: {copy_plan.reason(exc, target_url)}",
                hint="nothing was written (the copy is one transaction); fix it and run it again",
            ) from exc
        finally:
            dst_engine.dispose()
    finally:
        src_engine.dispose()
    return CopyReport(
        source=str(source),
        target=copy_plan.shown(target_url),
        created_schema=created,
        tables=tuple(tables),
        audit=chain,
        seconds=time.monotonic() - started,
    )


def _prepare(engine: sa.Engine, url: str, plans: Sequence[TablePlan]) -> bool:
    """Create the schema in an empty target (the migrations, in their own
    transaction: an empty schema at head is no data), or check that the target is
    at this version's; True when the schema was created here."""
    with engine.connect() as conn:
        empty = copy_plan.check_target_schema(conn, url, plans)
    if empty:
        try:
            migrate.upgrade(engine)
        except (sa.exc.SQLAlchemyError, StoreError) as exc:
            raise StoreError(
                f"cannot create the schema in {copy_plan.shown(url)}: {copy_plan.reason(exc, url)}",
                hint="check that the role may create tables there; nothing was copied",
            ) from exc
    return empty


def _check_source(src: Connection, source: Path, plans: Sequence[TablePlan]) -> VerifyResult:
    """Refuse a source with tables the copier does not know, or a broken chain."""
    unknown = copy_plan.unknown_tables(src, plans)
    if unknown:
        raise StoreError(
            f"the database {source} holds tables this version cannot copy: {', '.join(unknown)}",
            hint="copy with the agentdeck version that made them; nothing was copied",
        )
    chain = _verify(src)
    if not chain.ok:
        raise StoreError(
            f"the audit log of {source} is broken at entry {chain.entry_id}: {chain.message}",
            hint="`agentdeck audit verify` says the same; nothing was copied",
        )
    return chain


def _copy(
    src: Connection,
    dst: Connection,
    plans: Sequence[TablePlan],
    batch: int,
    url: str,
    on_table: Callable[[TableCopied], None] | None,
) -> list[TableCopied]:
    done = []
    for plan in plans:
        table = _copy_table(src, dst, plan, batch, url)
        done.append(table)
        if on_table is not None:
            on_table(table)
    return done


def _copy_table(
    src: Connection, dst: Connection, plan: TablePlan, batch: int, url: str
) -> TableCopied:
    """Each page goes in by ``COPY`` into a temporary table, is compared there with
    the rows of the same keys already in the target (any difference refuses the
    copy), and is inserted by one ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``,
    whose row count is what was new. (A multi-row ``INSERT`` ran at a third of the
    rows/s: psycopg spent half its time parsing the parameters.)"""
    quote = dst.dialect.identifier_preparer.quote
    raw = dst.connection.driver_connection
    assert raw is not None
    name, stage = quote(plan.name), quote(f"copy_{plan.name}")
    columns = ", ".join(quote(c.name) for c in plan.table.c)
    key = ", ".join(quote(c.name) for c in plan.key)
    # json has no equality (jsonb has, and normalises): compare as jsonb
    differs = " OR ".join(
        f"s.{quote(c.name)}::jsonb IS DISTINCT FROM t.{quote(c.name)}::jsonb"
        if copy_plan.is_json(c)
        else f"s.{quote(c.name)} IS DISTINCT FROM t.{quote(c.name)}"
        for c in plan.table.c
        if not c.primary_key
    )
    before = copy_plan.count(dst, plan.table)
    dst.exec_driver_sql(
        f"CREATE TEMPORARY TABLE {stage} ON COMMIT DROP AS "
        f"SELECT {columns} FROM {name} WITH NO DATA"
    )
    copied = total = cleaned = 0
    for page in copy_plan.raw_pages(src, plan, batch):
        total += len(page)
        rows, changed = copy_plan.storable(plan, page)
        cleaned += changed
        try:
            with raw.cursor() as cur:
                with cur.copy(f"COPY {stage} ({columns}) FROM STDIN") as pipe:
                    for row in rows:
                        pipe.write_row(row)
                if before:
                    cur.execute(
                        f"SELECT {', '.join(f's.{quote(c.name)}' for c in plan.key)} "
                        f"FROM {stage} s JOIN {name} t USING ({key}) WHERE {differs} LIMIT 1"
                    )
                    clash = cur.fetchone()
                    if clash is not None:
                        raise _foreign(
                            url, f"{plan.name} {_key_text(clash)} differs from this home's"
                        )
                cur.execute(
                    f"INSERT INTO {name} ({columns}) SELECT {columns} FROM {stage} "
                    f"ON CONFLICT ({key}) DO NOTHING"
                )
                copied += max(cur.rowcount, 0)
                cur.execute(f"TRUNCATE {stage}")
        except StoreError:
            raise
        except Exception as exc:  # psycopg's own errors: below SQLAlchemy here
            if not type(exc).__module__.startswith("psycopg"):
                raise
            raise StoreError(
                f"PostgreSQL refused a row of {plan.name}: {copy_plan.reason(exc)}",
                hint="nothing was written (the copy is one transaction)",
            ) from exc
    dst.exec_driver_sql(f"DROP TABLE {stage}")
    present = total - copied
    if present != before:
        extra = before - present
        rows_ = "row" if extra == 1 else "rows"
        raise _foreign(url, f"{plan.name} holds {extra} {rows_} this home does not have")
    return TableCopied(plan.name, copied=copied, present=present, total=total, cleaned=cleaned)


def _foreign(url: str, what: str) -> StoreError:
    return StoreError(
        f"{copy_plan.shown(url)} already holds other data: {what} (another deck's data, "
        "or this home changed since it was copied)",
        hint="copy into an empty database; nothing was copied",
    )


def _set_sequences(src: Connection, dst: Connection, plans: Sequence[TablePlan]) -> None:
    """Each sequence past the largest id given so far (SQLite's ``sqlite_sequence``
    remembers ids of deleted rows too), never lowered."""
    largest = copy_plan.largest_ids(src)
    for plan in plans:
        column = plan.serial
        if column is None:
            continue
        sequence = dst.execute(
            sa.select(sa.func.pg_get_serial_sequence(plan.name, column.name))
        ).scalar_one()
        if sequence is None:
            continue
        top = dst.execute(sa.select(sa.func.coalesce(sa.func.max(column), 0))).scalar_one()
        value = max(int(top), largest.get(plan.name, 0))
        current = dst.execute(sa.select(sa.func.pg_sequence_last_value(sequence))).scalar_one()
        if value > 0 and (current is None or int(current) < value):
            dst.execute(sa.select(sa.func.setval(sequence, value, True)))


def _check(
    dst: Connection, tables: Sequence[TableCopied], source_chain: VerifyResult, url: str
) -> VerifyResult:
    """Counts equal, the chain verifies and ends where the source's does: else the
    transaction is rolled back."""
    by_name = {p.name: p for p in copy_plan.plan()}
    for table in tables:
        have = copy_plan.count(dst, by_name[table.table].table)
        if have != table.total:
            raise StoreError(
                f"after the copy {table.table} holds {have} rows in {copy_plan.shown(url)}, "
                f"the source {table.total}",
                hint="something else writes to the target; nothing was copied",
            )
    chain = _verify(dst)
    if not chain.ok or (chain.count, chain.head) != (source_chain.count, source_chain.head):
        raise StoreError(
            f"the audit log does not verify in {copy_plan.shown(url)} after the copy: "
            f"{chain.message or f'{chain.count} entries, the source has {source_chain.count}'}",
            hint="nothing was copied",
        )
    return chain


def _verify(conn: Connection, page_size: int = 2000) -> VerifyResult:
    """The chain checked a page at a time, as ``Store.verify_audit`` does."""
    verifier = ChainVerifier()
    after = 0
    while True:
        entries = audit_rows.read_entries(conn, after=after, limit=page_size)
        for entry in entries:
            if verifier.feed(entry) is not None:
                return verifier.result()
            after = entry.id
        if len(entries) < page_size:
            return verifier.result()


def _key_text(key: tuple[Any, ...]) -> str:
    return repr(key[0]) if len(key) == 1 else repr(key)


__all__ = ["BATCH_ROWS", "CopyReport", "TableCopied", "copy_database"]
