"""The store on PostgreSQL, what only it has: bad URLs, a server that cannot be
reached or goes away mid-run, and a password that never shows."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from typing import Any

import pytest

from agentdeck.errors import StoreError, UsageError
from agentdeck.store import Store
from tests.support.pgcluster import PgCluster

from .conftest import db_rows, text

pytestmark = pytest.mark.anyio

PASSWORD = "s3cret-Pa55word"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_password(url: str) -> str:
    return url.replace("agentdeck@", f"agentdeck:{PASSWORD}@")


def test_a_server_nothing_listens_for_is_a_store_error_naming_host_and_database() -> None:
    port = _free_port()
    url = f"postgresql+psycopg://agentdeck:{PASSWORD}@127.0.0.1:{port}/deckdb"
    with pytest.raises(StoreError) as info:
        Store.open(url)
    said = f"{info.value} {info.value.hint}"
    assert f"PostgreSQL database deckdb on 127.0.0.1:{port}" in said
    assert PASSWORD not in said and PASSWORD not in repr(info.value.__cause__)
    assert info.value.hint and "reachable" in info.value.hint


def test_a_database_that_does_not_exist_is_a_store_error(pg_cluster: PgCluster) -> None:
    url = _with_password(pg_cluster.url("no_such_db"))
    with pytest.raises(StoreError) as info:
        Store.open(url)
    said = str(info.value)
    assert f"PostgreSQL database no_such_db on 127.0.0.1:{pg_cluster.port}" in said
    assert 'database "no_such_db" does not exist' in said
    assert PASSWORD not in said


@pytest.mark.parametrize(
    "url",
    [
        "mysql://root:hunter2@db/deck",
        "sqlite:////tmp/hunter2.db",
        "postgresql+asyncpg://u:hunter2@db/deck",
        "postgresql://u:hunter2@db:notaport/deck",
        "postgresql://u:hunter2@db/",
    ],
)
def test_a_url_of_another_kind_is_refused_naming_the_forms_accepted(url: str) -> None:
    with pytest.raises(UsageError) as info:
        Store.open(url)
    assert "postgresql+psycopg://" in str(info.value)
    assert "hunter2" not in f"{info.value} {info.value.hint}"


def test_without_psycopg_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    with pytest.raises(StoreError) as info:
        Store.open(pg_url)
    assert "pip install 'agentdeck[postgres]'" in str(info.value.hint)


async def test_postgresql_url_means_psycopg_and_the_name_hides_the_password(
    pg_url: str,
) -> None:
    plain = _with_password(pg_url).replace("postgresql+psycopg://", "postgresql://")
    async with Store.open(plain) as store:
        await store.append([text("a1", 0)])
        assert PASSWORD not in store.name and store.name.startswith("PostgreSQL database ")
        assert not store.has_file
        with pytest.raises(StoreError, match="has no file"):
            _ = store.db_path
        assert store.integrity_check() == "ok"


async def test_integrity_check_finds_an_id_sequence_behind_its_table(pg_url: str) -> None:
    async with Store.open(pg_url) as store:
        await store.append([text("a1", n) for n in range(5)])
        db_rows(pg_url, "SELECT setval(pg_get_serial_sequence('events', 'id'), 2)")
        problems = store.integrity_check()
    assert "behind the largest id 5 of events" in problems


async def test_a_server_restart_mid_run_loses_and_doubles_nothing(
    pg_cluster: PgCluster, pg_url: str
) -> None:
    """The writer appends batch after batch while the server restarts: every
    append returns (after a reconnect), every event is there once, ids ascend."""
    async with Store.open(pg_url, batch_size=20) as store:
        written: list[int] = []
        restarted = threading.Event()
        stop = asyncio.Event()
        enough = asyncio.Event()  # written again, after the restart
        wanted = [30]  # some written before the restart, then 60 more after it

        async def writer(worker: int) -> None:
            n = 0
            while not stop.is_set():
                stored = await store.append([text(f"w{worker}", n + i) for i in range(5)])
                written.extend(e.id for e in stored)
                if len(written) >= wanted[0]:
                    enough.set()
                n += 5  # append awaits the writer's commit: the others run meanwhile

        def restart() -> None:
            pg_cluster.restart()
            restarted.set()

        async with asyncio.TaskGroup() as tg:
            for w in range(3):
                tg.create_task(writer(w))
            await asyncio.wait_for(enough.wait(), 120)
            enough.clear()
            wanted[0] = 1 << 62
            before = len(written)
            thread = threading.Thread(target=restart)
            thread.start()
            await asyncio.to_thread(restarted.wait, 120)
            wanted[0] = len(written) + 60
            await asyncio.wait_for(enough.wait(), 120)
            stop.set()
        await asyncio.to_thread(thread.join, 120)
        assert before > 0

        rows = db_rows(pg_url, "SELECT id, agent_id, data->>'text' FROM events ORDER BY id")
        assert len(rows) == len(written) == len(set(written))  # none lost, none twice
        assert sorted(written) == [r[0] for r in rows]
        per_writer = {(r[1], r[2]) for r in rows}
        assert len(per_writer) == len(rows)  # no text written twice
        # The reads reconnect too (the pool pings what it hands out).
        assert [e.id for e in await store.read(limit=100_000)] == [r[0] for r in rows]


@pytest.mark.parametrize("landed", [True, False], ids=["after-commit", "before-commit"])
async def test_a_connection_lost_at_commit_writes_the_batch_exactly_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, landed: bool
) -> None:
    """COMMIT sent, then the connection gone: whether it landed is read back by
    the batch's first id, so the batch is neither doubled nor lost."""
    import psycopg

    async with Store.open(pg_url) as store:
        await store.append([text("a0", 0)])
        dialect_ = store._write_engine.dialect
        real_commit = dialect_.do_commit
        calls: list[int] = []

        def lost_commit(dbapi_connection: Any) -> None:
            calls.append(1)
            if len(calls) == 1:
                if landed:
                    real_commit(dbapi_connection)
                # (SQLAlchemy hands its pool's wrapper: the driver's connection is in it)
                pid = dbapi_connection.dbapi_connection.info.backend_pid  # goes away
                db_rows(pg_url, "SELECT pg_terminate_backend(?)", (pid,))
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            real_commit(dbapi_connection)

        monkeypatch.setattr(dialect_, "do_commit", lost_commit)
        stored = await store.append([text("a1", n) for n in range(3)])
        assert len(calls) >= 2
        rows = db_rows(pg_url, "SELECT id, agent_id FROM events ORDER BY id")
        assert [r[1] for r in rows] == ["a0", "a1", "a1", "a1"]
        assert [s.id for s in stored] == [r[0] for r in rows[1:]]
        assert await store.read(after=rows[-1][0]) == []


def test_postgresqls_disk_full_is_a_full_disk() -> None:
    """SQLSTATE 53100 fails the writes as ``DiskFull`` (not a plain write error),
    wrapped by SQLAlchemy or not; another server error is not one."""
    import psycopg
    import sqlalchemy as sa

    from agentdeck.store.reserve import is_disk_full

    full = psycopg.errors.DiskFull("could not extend file: No space left on device")
    assert is_disk_full(full)
    assert is_disk_full(sa.exc.OperationalError("INSERT ...", {}, full))
    assert not is_disk_full(psycopg.errors.UniqueViolation("duplicate key"))


async def test_a_read_cannot_write_on_postgresql(pg_url: str) -> None:
    """Reads run in read-only transactions (SQLite's query_only): only the writer
    thread writes."""
    async with Store.open(pg_url) as store:
        with pytest.raises(StoreError, match="read-only transaction"):
            await store._read(
                lambda c: c.exec_driver_sql("INSERT INTO users VALUES ('x', 'admin', 1)")
            )
        assert (
            await store._read(lambda c: c.exec_driver_sql("SELECT count(*) FROM users").scalar())
            == 0
        )
