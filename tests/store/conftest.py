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


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "agentdeck.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    s = Store.open(db_path)
    try:
        yield s
    finally:
        await s.close()
    assert sqlite_rows(db_path, "PRAGMA integrity_check") == [("ok",)]


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
