"""The least-privilege set-up docs/deploy.md gives, as an operator follows it: an
owner role runs the migrations; the deck's own role may read and write rows but
create, alter or drop nothing, and the store works under it (events, agents,
memory search, users, the audit chain)."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from agentdeck.core.memory import Observation
from agentdeck.errors import StoreError
from agentdeck.store import Store
from agentdeck.store.head import HEAD
from agentdeck.store.memory import MemoryStore
from tests.support.deckcli import deck, deck_env
from tests.support.pgcluster import PgCluster

from .conftest import make_agent, text

pytestmark = pytest.mark.anyio

# What docs/deploy.md says to run, with this cluster's role names (trust auth here;
# a real deployment gives each role a password).
SETUP = """
CREATE ROLE {owner} LOGIN;
CREATE ROLE {app} LOGIN;
CREATE DATABASE {db} OWNER {owner};
"""
GRANTS = """
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
  GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {app};
"""


def _run(cluster: PgCluster, database: str, sql: str, *, user: str = PgCluster.USER) -> None:
    dsn = f"host=127.0.0.1 port={cluster.port} user={user} dbname={database}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in filter(str.strip, sql.split(";")):
            conn.execute(statement)


def _url(cluster: PgCluster, user: str, database: str) -> str:
    return f"postgresql+psycopg://{user}@127.0.0.1:{cluster.port}/{database}"


async def test_the_deck_runs_under_a_role_that_can_change_no_schema(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    tag = f"r{int(time.time() * 1000) % 10**9}"
    names = {"owner": f"{tag}_owner", "app": f"{tag}_app", "db": f"{tag}_deck"}
    _run(pg_cluster, "postgres", SETUP.format(**names))
    _run(pg_cluster, names["db"], GRANTS.format(**names), user=names["owner"])

    # The owner migrates: `agentdeck db upgrade` with the owner's URL.
    owner_url = _url(pg_cluster, names["owner"], names["db"])
    owner_env = deck_env(tmp_path, AGENTDECK_DATABASE_URL=owner_url)
    upgraded = deck(owner_env, "db", "upgrade", "--json")
    assert upgraded.code == 0, upgraded.err
    assert upgraded.json()["schema"] == HEAD

    app_url = _url(pg_cluster, names["app"], names["db"])
    async with Store.open(app_url) as store:
        stored = await store.record([text("a1", n) for n in range(3)], make_agent("a1"))
        assert [e.id for e in stored] == [1, 2, 3]
        memory = MemoryStore(store)
        await memory.add_observation(
            Observation(
                id="ob1",
                project="/p",
                session_id="s1",
                agent_id="a1",
                ts=time.time(),
                tool="Bash",
                input_summary="Bash(pytest -q tests/test_retry.py)",
                output_excerpt="3 passed",
            )
        )
        assert [h.id for h in await memory.search("retry")] == ["ob1"]
        assert (await store.verify_audit()).ok

    engine = sa.create_engine(app_url)
    try:
        with engine.connect() as conn:
            for ddl in ("DROP TABLE events", "CREATE TABLE x (a int)", "TRUNCATE events"):
                with pytest.raises(sa.exc.ProgrammingError):
                    conn.execute(sa.text(ddl))
                conn.rollback()
    finally:
        engine.dispose()


async def test_a_role_that_may_not_create_tables_cannot_make_the_schema(
    pg_cluster: PgCluster,
) -> None:
    """The deck's role on an empty database: one clear error, nothing half made."""
    tag = f"e{int(time.time() * 1000) % 10**9}"
    names = {"owner": f"{tag}_owner", "app": f"{tag}_app", "db": f"{tag}_deck"}
    _run(pg_cluster, "postgres", SETUP.format(**names))
    _run(pg_cluster, names["db"], GRANTS.format(**names), user=names["owner"])
    with pytest.raises(StoreError) as raised:
        Store.open(_url(pg_cluster, names["app"], names["db"]))
    assert names["db"] in str(raised.value)
