"""``Store.read_rows``: the log as plain rows for a pass over all of it (``policy
replay``), the same events ``read`` gives, their data left as JSON text."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy.dialects import sqlite

from agentdeck.core.events import ToolCalled, ToolReturned
from agentdeck.store import Store
from agentdeck.store.scan import scan_query

from .conftest import sqlite_rows, text

pytestmark = pytest.mark.anyio
TYPES = ("tool_called", "tool_returned")
LITERAL = {"literal_binds": True}


async def _log(store: Store) -> None:
    now = time.time()
    events = []
    for i in range(12):
        agent = "a1" if i % 2 else "a2"
        use = f"toolu_{i}"
        events += [
            text(agent, i),
            ToolCalled(agent_id=agent, ts=now, tool_use_id=use, tool="Bash",
                       input={"command": f"echo {i} é"}),
            ToolReturned(agent_id=agent, ts=now, tool_use_id=use, output="x" * 5000),
        ]  # fmt: skip
    await store.append(events)


async def test_rows_are_the_events_read_gives(store: Store) -> None:
    await _log(store)
    for agent, types in ((None, None), (None, TYPES), ("a1", TYPES), ("a2", None)):
        events = await store.read(agent_id=agent, types=types, limit=1000)
        rows = await store.read_rows(agent_id=agent, types=types, limit=1000)
        assert [(r.id, r.agent_id, r.type, r.ts) for r in rows] == [
            (e.id, e.agent_id, e.type, e.ts) for e in events
        ]
        assert [json.loads(r.data or "") for r in rows] == [e.data for e in events]
        assert {r.field for r in rows} == {None}


async def test_pages_bounds_and_brief_types(store: Store) -> None:
    await _log(store)
    every = await store.read(types=TYPES, limit=1000)
    seen, after = [], 0
    while page := await store.read_rows(
        after=after, upto=every[-3].id, types=TYPES, brief={"tool_returned": "tool_use_id"},
        limit=5,
    ):  # fmt: skip
        assert len(page) <= 5
        seen += page
        after = page[-1].id
    assert [r.id for r in seen] == [e.id for e in every[:-2]]
    for row, event in zip(seen, every, strict=False):
        if row.type == "tool_returned":  # its output is not read: only the id asked for
            assert (row.data, row.field) == (None, event.data["tool_use_id"])
        else:
            assert (json.loads(row.data or ""), row.field) == (event.data, None)
    assert await store.read_rows(after=every[-1].id) == []
    assert await store.read_rows(agent_id="nobody") == []


@pytest.mark.sqlite_only("reads SQLite's EXPLAIN QUERY PLAN")
async def test_a_page_walks_the_primary_key_not_the_type_index(store: Store, db_path: Path) -> None:
    """The type index found every event of the types and sorted them all by id,
    for each page: a pass over 209,000 events took 6.6 s in pages of 2,000."""
    await store.append([text("a1", 0)])
    query = scan_query(after=0, upto=None, agent_id=None, types=TYPES, brief={})
    sql = str(query.limit(2000).compile(dialect=sqlite.dialect(), compile_kwargs=LITERAL))
    plan = sqlite_rows(db_path, f"EXPLAIN QUERY PLAN {sql}")
    detail = " ".join(str(row[-1]) for row in plan)
    assert "PRIMARY KEY" in detail, detail
    assert "TEMP B-TREE" not in detail, detail
