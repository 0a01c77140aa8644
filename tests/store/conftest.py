from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText
from agentdeck.store import Store


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(why): a store test of something only SQLite has (a PRAGMA, the "
        "disk-full reserve, the file): run on SQLite only, skipped on PostgreSQL saying why",
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "agentdeck.db"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each store test runs on both backends (PostgreSQL: a fresh database on the
    process's private cluster, ``tests/support/pgcluster.py``)."""
    marker = request.node.get_closest_marker("sqlite_only")
    if request.param == "postgres" and marker is not None:
        pytest.skip(f"SQLite only: {marker.args[0] if marker.args else 'SQLite-specific'}")
    return str(request.param)


@pytest.fixture
def target(backend: str, db_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """What ``Store.open`` takes: the SQLite file, or a fresh PostgreSQL URL."""
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return db_path


@pytest.fixture
async def store(target: Path | str) -> AsyncIterator[Store]:
    s = Store.open(target)
    s._test_target = target  # type: ignore[attr-defined]  # for db_rows
    try:
        yield s
    finally:
        await s.close()
    if isinstance(target, Path):
        assert sqlite_rows(target, "PRAGMA integrity_check") == [("ok",)]
    else:
        assert db_rows(target, "SELECT count(*) FROM alembic_version") == [(1,)]


def db_rows(
    where: Store | Path | str, sql: str, params: tuple[Any, ...] = ()
) -> list[tuple[Any, ...]]:
    """Run ``sql`` (``?`` placeholders) through a plain connection of its own, on
    either backend, and commit: what another process would see (or do)."""
    target = getattr(where, "_test_target", where)
    if isinstance(target, Store):  # one a test opened itself on a file
        target = target.db_path
    if isinstance(target, Path):
        conn = sqlite3.connect(target, timeout=30)
        try:
            with conn:
                cur = conn.execute(sql, params)
                return cur.fetchall()
        finally:
            conn.close()
    import psycopg

    url = str(target).replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url) as pg:
        cur = pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return [tuple(r) for r in cur.fetchall()] if cur.description else []


def sqlite_rows(db_path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Query through a plain sqlite3 connection: what another process would see."""
    conn = sqlite3.connect(db_path, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def text(agent_id: str, n: int) -> AssistantText:
    return AssistantText(agent_id=agent_id, ts=time.time(), text=f"msg {n}")


def make_agent(
    agent_id: str,
    *,
    name: str | None = None,
    state: AgentState = AgentState.RUNNING,
    created_at: float = 1000.0,
    **changes: Any,
) -> Agent:
    return Agent(
        id=agent_id,
        name=name or f"name-{agent_id}",
        state=state,
        spec=AgentSpec(prompt=f"prompt for {agent_id}", allow=("Bash(pytest *)",)),
        cwd="/work/proj",
        created_at=created_at,
        updated_at=created_at,
        **changes,
    )


async def wait_for(condition: Callable[[], bool], *, timeout: float = 10.0) -> None:
    """Poll ``condition()`` until it holds; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met before the deadline"
        await anyio.sleep(0.01)


class Collector:
    """A subscriber that remembers batches and lets a test wait for a count."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self._cond = threading.Condition()

    def __call__(self, events: Any) -> None:
        with self._cond:
            self.batches.append(list(events))
            self._cond.notify_all()

    @property
    def events(self) -> list[Any]:
        with self._cond:
            return [e for b in self.batches for e in b]

    async def wait_count(self, n: int, timeout: float = 10.0) -> None:
        def wait() -> bool:
            with self._cond:
                return self._cond.wait_for(lambda: sum(len(b) for b in self.batches) >= n, timeout)

        assert await anyio.to_thread.run_sync(wait), f"fewer than {n} events delivered"
