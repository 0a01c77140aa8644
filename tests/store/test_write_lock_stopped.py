"""A writer stopped inside its transaction does not freeze every other writer.

The deck's write lock on PostgreSQL is a transaction-scoped advisory lock: a
runner host stopped (SIGSTOP, a frozen machine) in the middle of a batch would
hold it, and every writer of every host would wait for it. The writer's session
is ended by PostgreSQL once it sits idle in its transaction for
``WRITER_IDLE_MS``, and its lock goes with it. Here a connection made as the
store makes its writer's takes the lock and then does nothing, as a stopped
process would.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import sqlalchemy as sa

from agentdeck.core.events import Notice
from agentdeck.store import Store
from agentdeck.store.dialect_postgres import WRITER_IDLE_MS, create_engine, take_write_lock

pytestmark = pytest.mark.anyio


async def test_a_writer_stopped_mid_transaction_loses_its_lock_and_the_others_go_on(
    pg_url: str,
) -> None:
    async with Store.open(pg_url) as store:
        stopped = create_engine(pg_url, writer=True)
        try:
            conn = stopped.connect()
            conn.begin()  # takes the write lock, as each of the writer's transactions does
            held_since = time.monotonic()
            written = await asyncio.wait_for(
                store.append([Notice(agent_id="a1", ts=1.0, kind="k", message="m")]),
                timeout=WRITER_IDLE_MS / 1000 + 30,
            )
            waited = time.monotonic() - held_since
            assert [e.type for e in written] == ["notice"]
            assert waited >= WRITER_IDLE_MS / 1000 * 0.8  # it did wait for the lock first
            with pytest.raises(sa.exc.DBAPIError):  # the stopped one's session is gone
                take_write_lock(conn)
                conn.commit()
            conn.close()
        finally:
            stopped.dispose()
