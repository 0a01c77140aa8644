from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from agentdeck.core.memory import Observation
from agentdeck.store import Store, dialect, migrate
from agentdeck.store.memory import MemoryStore
from agentdeck.store.schema import MEMORY_FTS, MEMORY_FTS_SHADOWS, is_index_table, metadata

from .conftest import sqlite_rows

pytestmark = pytest.mark.anyio


def _compare(conn: sa.Connection) -> list[object]:
    """Alembic's diff against the metadata; full-text tables are outside it (their
    SQL is compared between the two paths below)."""

    def include_name(name: str | None, type_: str, _parent: object) -> bool:
        return not (type_ == "table" and name is not None and is_index_table(name))

    context = MigrationContext.configure(conn, opts={"include_name": include_name})
    return list(compare_metadata(context, metadata))


def _schema(db_path: Path) -> list[tuple[str, str, str]]:
    return sorted(
        (str(t), str(n), str(s))
        for t, n, s in sqlite_rows(db_path, "SELECT type, name, sql FROM sqlite_master")
    )


async def test_open_creates_schema_at_head(db_path: Path) -> None:
    store = Store.open(db_path)
    await store.close()
    tables = {n for t, n, _ in _schema(db_path) if t == "table"}
    assert {"agents", "events", "commands", "alembic_version"} <= tables
    assert sqlite_rows(db_path, "SELECT version_num FROM alembic_version") == [
        (migrate.head_revision(),)
    ]
    assert sqlite_rows(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_migration_matches_schema_metadata(db_path: Path) -> None:
    store = Store.open(db_path)
    await store.close()
    engine = sa.create_engine(dialect.database_url(db_path))
    try:
        with engine.connect() as conn:
            diff = _compare(conn)
    finally:
        engine.dispose()
    assert diff == []


async def test_upgrade_at_head_is_a_noop(db_path: Path) -> None:
    store = Store.open(db_path)
    await store.close()
    before = _schema(db_path)

    statements: list[str] = []
    engine = dialect.create_engine(db_path, writer=True)
    sa.event.listen(engine, "before_cursor_execute", lambda *args: statements.append(str(args[2])))
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    changes = [
        s
        for s in statements
        if s.split()[0].upper() in {"CREATE", "ALTER", "DROP", "INSERT", "UPDATE"}
    ]
    assert changes == []
    assert _schema(db_path) == before

    # and reopening through the Store keeps data and schema
    store = Store.open(db_path)
    await store.close()
    assert _schema(db_path) == before


async def test_downgrade_and_upgrade_again(db_path: Path) -> None:
    store = Store.open(db_path)
    await store.close()
    engine = dialect.create_engine(db_path, writer=True)
    try:
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(conn), "base")
        tables = {n for t, n, _ in _schema(db_path) if t == "table"}
        assert "events" not in tables
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    assert {"agents", "events", "commands"} <= {n for t, n, _ in _schema(db_path) if t == "table"}


def test_the_fast_path_head_matches_the_shipped_migrations() -> None:
    assert migrate.head_revision() == migrate.HEAD


async def test_running_every_migration_equals_the_fresh_database_fast_path(
    tmp_path: Path,
) -> None:
    fresh = tmp_path / "fresh.db"
    store = Store.open(fresh)  # new file: schema from metadata, stamped at head
    await store.close()

    migrated = tmp_path / "migrated.db"
    engine = dialect.create_engine(migrated, writer=True)
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "head")
        with engine.connect() as conn:
            assert _compare(conn) == []
    finally:
        engine.dispose()

    def names(path: Path) -> set[tuple[str, str]]:
        return {(t, n) for t, n, _ in _schema(path) if not n.startswith("sqlite_")}

    assert names(fresh) == names(migrated)

    # The full-text table and its shadows, which compare_metadata skips: same SQL.
    def index_tables(path: Path) -> list[tuple[str, str, str]]:
        return [row for row in _schema(path) if is_index_table(row[1])]

    assert {n for _, n, _ in index_tables(fresh)} == {MEMORY_FTS, *MEMORY_FTS_SHADOWS}
    assert index_tables(fresh) == index_tables(migrated)
    assert sqlite_rows(fresh, "SELECT version_num FROM alembic_version") == sqlite_rows(
        migrated, "SELECT version_num FROM alembic_version"
    )


async def test_an_older_database_is_upgraded_in_place_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = dialect.create_engine(path, writer=True)
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0001")
            conn.execute(
                sa.text(
                    "INSERT INTO events (agent_id, type, ts, data) VALUES ('a1', 'notice', 1, '{}')"
                )
            )
    finally:
        engine.dispose()
    store = Store.open(path)
    try:
        assert [e.agent_id for e in await store.read()] == ["a1"]
    finally:
        await store.close()
    assert sqlite_rows(path, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]
    tables = {n for t, n, _ in _schema(path) if t == "table"}
    assert {"approvals", "grants", "audit"} <= tables


async def test_a_governance_database_gains_memory_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "at-0002.db"
    engine = dialect.create_engine(path, writer=True)
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0002")
            conn.execute(
                sa.text(
                    "INSERT INTO events (agent_id, type, ts, data) VALUES ('a1', 'notice', 1, '{}')"
                )
            )
            conn.execute(
                sa.text(
                    "INSERT INTO grants (grant_key, rule, decision, scope, created_at) "
                    "VALUES ('k', 'Bash(ls)', 'allow', 'persistent', 1)"
                )
            )
    finally:
        engine.dispose()
    assert "observations" not in {n for t, n, _ in _schema(path) if t == "table"}

    store = Store.open(path)
    try:
        assert [e.agent_id for e in await store.read()] == ["a1"]
        memory = MemoryStore(store)
        observation = Observation(
            id="ob000000000001",
            project="/p",
            session_id="s1",
            agent_id="a1",
            ts=2.0,
            tool="Bash",
            input_summary="Bash(make)",
            output_excerpt="migrated fine",
        )
        await memory.add_observation(observation)
        assert [h.id for h in await memory.search("migrated")] == [observation.id]
    finally:
        await store.close()
    assert sqlite_rows(path, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]
    assert sqlite_rows(path, "SELECT rule FROM grants") == [("Bash(ls)",)]
    tables = {n for t, n, _ in _schema(path) if t == "table"}
    assert {"observations", "summaries", MEMORY_FTS} <= tables


async def test_downgrading_0003_drops_memory_and_its_index(tmp_path: Path) -> None:
    path = tmp_path / "down.db"
    store = Store.open(path)
    await store.close()
    engine = dialect.create_engine(path, writer=True)
    try:
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(conn), "0002")
    finally:
        engine.dispose()
    names = {n for _, n, _ in _schema(path)}
    assert not names & {"observations", "summaries", MEMORY_FTS, *MEMORY_FTS_SHADOWS}
    assert "approvals" in names


async def test_0008_gives_existing_agents_an_owner_and_rolls_up_the_costs_in_the_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "at-0005.db"
    engine = dialect.create_engine(path, writer=True)
    spec = '{"prompt": "p", "cwd": "/w/one", "template": "engineer"}'
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0005")
            conn.execute(
                sa.text(
                    "INSERT INTO agents (id, name, state, source, spec, cwd, cost_usd, "
                    "input_tokens, output_tokens, turns, extra, created_at, updated_at) "
                    "VALUES ('a1', 'n', 'done', 'agentdeck', :spec, '/w/one', 0.3, 0, 0, 0, "
                    "'{}', 1, 1)"
                ),
                {"spec": spec},
            )
            for ts, delta in ((7200.0, 0.1), (7300.0, 0.2), (11000.0, 0.05)):
                data = json.dumps(
                    {"cost_usd": 1, "input_tokens": 10, "output_tokens": 2, "delta_usd": delta}
                )
                conn.execute(
                    sa.text(
                        "INSERT INTO events (agent_id, type, ts, data) "
                        "VALUES ('a1', 'cost_updated', :ts, :data)"
                    ),
                    {"ts": ts, "data": data},
                )
    finally:
        engine.dispose()
    store = Store.open(path)
    await store.close()
    assert sqlite_rows(path, "SELECT owner, project, template FROM agents") == [
        ("admin", "/w/one", "engineer")
    ]
    rows = sqlite_rows(
        path,
        "SELECT hour, round(cost_usd, 6), input_tokens, results FROM usage_hours ORDER BY hour",
    )
    assert rows == [(7200.0, 0.3, 20, 2), (10800.0, 0.05, 10, 1)]
