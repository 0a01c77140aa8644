"""``store.feed``: the event log read by a process of its own (the span exporter's),
on both backends: the events ``read`` gives, in pages, of the types asked for,
never past ``upto``; a row not written by the store reads as an event that says
nothing, never as a failure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentdeck.core.events import ToolCalled, ToolReturned
from agentdeck.errors import StoreError
from agentdeck.store import Store, dialect
from agentdeck.store.feed import LogFeed
from agentdeck.store.schema import events as events_table

from .conftest import text

pytestmark = pytest.mark.anyio
TYPES = ("tool_called", "tool_returned")


async def test_the_feed_reads_what_read_gives_page_by_page(
    store: Store, target: Path | str
) -> None:
    now = time.time()
    written = []
    for i in range(5):
        use = f"toolu_{i}"
        written += [
            text("a1", i),
            ToolCalled(agent_id="a1", ts=now, tool_use_id=use, tool="Bash",
                       input={"command": f"echo {i} é"}),
            ToolReturned(agent_id="a1", ts=now, tool_use_id=use, output="x" * 500),
        ]  # fmt: skip
    stored = await store.append(written)
    expected = [e for e in await store.read(types=TYPES) if e.id <= stored[-3].id]
    feed = LogFeed(target)
    try:
        got, after = [], 0
        while page := feed.events(after=after, upto=stored[-3].id, types=TYPES, limit=3):
            got += page
            after = page[-1].id
        assert got == expected  # the last call and its result past ``upto``: not read
        assert feed.events(after=stored[-1].id, upto=stored[-1].id + 5, types=TYPES, limit=9) == []
    finally:
        feed.close()


async def test_a_row_the_store_did_not_write_reads_as_an_event_that_says_nothing(
    store: Store, target: Path | str
) -> None:
    [kept] = await store.append([ToolCalled(agent_id="a", ts=1.0, tool_use_id="u", tool="Ls",
                                            input={})])  # fmt: skip
    feed = LogFeed(target)
    try:
        writer = dialect.create_engine(target, writer=True)  # the feed's own is read only
        try:
            with writer.begin() as conn:
                row = {"agent_id": "a", "type": "tool_called", "ts": 2.0, "data": [1, 2]}
                conn.execute(sa.insert(events_table).values(**row))
        finally:
            writer.dispose()
        [first, odd] = feed.events(after=0, upto=kept.id + 1, types=TYPES, limit=10)
        assert first == kept and odd.data == {} and odd.type == "tool_called"
    finally:
        feed.close()


def test_a_database_it_cannot_reach_is_named_never_its_password() -> None:
    feed = LogFeed("postgresql+psycopg://deck:s3cr3t-pw@127.0.0.1:9/events_db")
    try:
        with pytest.raises(StoreError) as raised:
            feed.events(after=0, upto=10, types=TYPES, limit=10)
    finally:
        feed.close()
    said = str(raised.value)
    assert "cannot read the event log in the PostgreSQL database events_db on 127.0.0.1:9" in said
    assert "s3cr3t-pw" not in said and "SELECT" not in said
