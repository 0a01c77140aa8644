"""``Store.read_tail``: the newest events of the log or of one agent, paged backwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.store import Store

from .conftest import sqlite_rows, text

pytestmark = pytest.mark.anyio


async def test_tail_of_one_agent_pages_backwards(store: Store) -> None:
    await store.append([text("a1" if i % 2 else "a2", i) for i in range(20)])
    last = await store.read_tail(agent_id="a1", limit=3)
    assert [e.id for e in last] == [16, 18, 20]
    older = await store.read_tail(agent_id="a1", before=last[0].id, limit=3)
    assert [e.id for e in older] == [10, 12, 14]
    assert await store.read_tail(agent_id="a1", before=2, limit=3) == []
    assert [e.id for e in await store.read_tail(limit=2)] == [19, 20]
    assert [e.id for e in await store.read_tail(before=3, limit=5)] == [1, 2]
    assert await store.read_tail(agent_id="nobody") == []


@pytest.mark.sqlite_only("reads SQLite's EXPLAIN QUERY PLAN")
async def test_tail_query_uses_the_agent_index(store: Store, db_path: Path) -> None:
    await store.append([text("a1", 0)])
    plan = sqlite_rows(
        db_path,
        "EXPLAIN QUERY PLAN SELECT * FROM events WHERE agent_id = ? AND id < ? "
        "ORDER BY id DESC LIMIT 200",
        ("a1", 10),
    )
    detail = " ".join(str(row[-1]) for row in plan)
    assert "ix_events_agent_id_id" in detail
    assert "TEMP B-TREE" not in detail
