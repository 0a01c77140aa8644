"""The same Alembic migrations on PostgreSQL: a fresh database (create_all and a
stamp) equals one that ran every migration; JSON is ``jsonb``, ids are ``bigint``
from a sequence; the full-text table is the tsvector one memory search reads;
an older database upgrades keeping its rows (0008's rollup in PostgreSQL's SQL)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from agentdeck.core.agent import PROMPT_REDACTED
from agentdeck.store import Store, dialect, migrate
from agentdeck.store.schema import MEMORY_FTS, is_index_table, metadata
from tests.support.pgcluster import PgCluster

from .conftest import db_rows
from .test_scrub_migration import _at_0008

pytestmark = pytest.mark.anyio


def _compare(conn: sa.Connection) -> list[object]:
    def include_name(name: str | None, type_: str, _parent: object) -> bool:
        return not (type_ == "table" and name is not None and is_index_table(name))

    context = MigrationContext.configure(conn, opts={"include_name": include_name})
    return list(compare_metadata(context, metadata))


def _columns(url: str) -> list[tuple[object, ...]]:
    return db_rows(
        url,
        "SELECT table_name, column_name, data_type, is_nullable, column_default, "
        "is_identity, generation_expression FROM information_schema.columns "
        "WHERE table_schema = 'public' ORDER BY table_name, column_name",
    )


def _indexes(url: str) -> list[tuple[object, ...]]:
    return db_rows(
        url,
        "SELECT tablename, indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = 'public' ORDER BY tablename, indexname",
    )


def _migrated(url: str, to: str = "head") -> None:
    engine = dialect.create_engine(url, writer=True)
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), to)
    finally:
        engine.dispose()


async def test_every_migration_equals_the_fresh_database_on_postgresql(
    pg_cluster: PgCluster, pg_url: str
) -> None:
    fresh = pg_url
    async with Store.open(fresh):
        pass
    migrated = pg_cluster.database()
    _migrated(migrated)
    for url in (fresh, migrated):
        engine = sa.create_engine(url)
        try:
            with engine.connect() as conn:
                assert _compare(conn) == []
        finally:
            engine.dispose()
    assert _columns(fresh) == _columns(migrated)
    assert _indexes(fresh) == _indexes(migrated)
    assert db_rows(fresh, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]
    assert db_rows(migrated, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]

    columns = {(t, c): d for t, c, d, *_ in _columns(fresh)}
    assert columns["events", "data"] == columns["agents", "spec"] == "jsonb"
    assert columns["events", "id"] == columns["audit", "id"] == "bigint"
    assert columns["agents", "archived"] == "boolean"
    assert columns["events", "ts"] == "double precision"
    # The full-text table memory search on PostgreSQL reads.
    fts = {c: rest for t, c, *rest in _columns(fresh) if t == MEMORY_FTS}
    assert set(fts) == {"rowid", "title", "body", "scope", "memory_id", "tsv"}
    assert fts["tsv"][0] == "tsvector" and "setweight" in str(fts["tsv"][-1])
    assert fts["rowid"][3] == "YES"  # an identity
    assert {n for t, n, _ in _indexes(fresh) if t == MEMORY_FTS} == {
        "memory_fts_pkey",
        "ix_memory_fts_tsv",
        "ix_memory_fts_memory_id",
    }


async def test_upgrade_at_head_is_a_noop_and_downgrade_then_upgrade_works(pg_url: str) -> None:
    async with Store.open(pg_url):
        pass
    before = (_columns(pg_url), _indexes(pg_url))
    statements: list[str] = []
    engine = dialect.create_engine(pg_url, writer=True)
    sa.event.listen(engine, "before_cursor_execute", lambda *args: statements.append(str(args[2])))
    try:
        migrate.upgrade(engine)
        assert [s for s in statements if s.split()[0].upper() in {"CREATE", "ALTER", "DROP"}] == []
        with engine.begin() as conn:
            command.downgrade(migrate.alembic_config(conn), "base")
        assert db_rows(pg_url, "SELECT count(*) FROM pg_tables WHERE tablename = 'events'") == [
            (0,)
        ]
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    assert (_columns(pg_url), _indexes(pg_url)) == before


async def test_an_older_postgresql_database_upgrades_keeping_its_rows(pg_url: str) -> None:
    _migrated(pg_url, "0005")
    spec = json.dumps({"prompt": "p", "cwd": "/w/one", "template": "engineer"})
    db_rows(
        pg_url,
        "INSERT INTO agents (id, name, state, source, spec, cwd, cost_usd, input_tokens, "
        "output_tokens, turns, extra, created_at, updated_at) VALUES "
        "('a1', 'n', 'done', 'agentdeck', ?::jsonb, '/w/one', 0.3, 0, 0, 0, '{}', 1, 1)",
        (spec,),
    )
    for ts, delta in ((7200.0, 0.1), (7300.0, 0.2), (11000.0, 0.05)):
        data = {"cost_usd": 1, "input_tokens": 10, "output_tokens": 2, "delta_usd": delta}
        db_rows(
            pg_url,
            "INSERT INTO events (agent_id, type, ts, data) "
            "VALUES ('a1', 'cost_updated', ?, ?::jsonb)",
            (ts, json.dumps(data)),
        )
    async with Store.open(pg_url) as store:
        assert [e.id for e in await store.read()] == [1, 2, 3]
    assert db_rows(pg_url, "SELECT owner, project, template FROM agents") == [
        ("admin", "/w/one", "engineer")
    ]
    rows = db_rows(
        pg_url,
        "SELECT agent_id, hour, round(cost_usd::numeric, 4), input_tokens, output_tokens, "
        "results FROM usage_hours ORDER BY hour",
    )
    assert [(a, h, float(c), i, o, r) for a, h, c, i, o, r in rows] == [
        ("a1", 7200.0, 0.3, 20, 4, 2),
        ("a1", 10800.0, 0.05, 10, 2, 1),
    ]


async def test_0009_scrubs_what_an_older_version_wrote_on_postgresql(pg_url: str) -> None:
    _at_0008(pg_url)  # type: ignore[arg-type]  # a URL opens as well as a path
    async with Store.open(pg_url) as store:
        one, two = await store.get_agent("a1"), await store.get_agent("a2")
        assert one.spec.prompt == "deploy with [REDACTED:github-token]"
        assert one.extra[PROMPT_REDACTED] is True
        assert two.spec.prompt == "plain words" and PROMPT_REDACTED not in two.extra
        commands = await store.list_commands("a1")
    assert [(c.payload["text"], c.claimed_by) for c in commands] == [
        ("token [REDACTED:github-token]", "pid:1"),
        ("GITHUB_TOKEN=[REDACTED:github-token]", "refused:held-a-secret"),
        ("hi", None),
    ]
    assert db_rows(pg_url, "SELECT jsonb_typeof(payload) FROM commands LIMIT 1") == [("object",)]
