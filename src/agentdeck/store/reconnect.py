"""Writing again after the connection to the database was lost (PostgreSQL: a
server restart, the network); SQLite's connection is a file and is never lost.

The writer thread calls ``again`` with the work to redo: it waits a little more
each time (SQLAlchemy connects anew on the next use of an invalidated
connection) until the server answers, or ``RECONNECT_SECONDS`` have passed.
``landed`` answers the one question a lost COMMIT leaves open.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

T = TypeVar("T")

RECONNECT_SECONDS = 60.0
_BACKOFF_SECONDS = (0.05, 0.1, 0.2, 0.5, 1.0)


def again(
    work: Callable[[], T],
    *,
    lost: Callable[[BaseException], bool],
    cleanup: Callable[[], None],
    wait_first: bool = True,
) -> tuple[T, int]:
    """``work()``'s value and the tries it took; what it raises when the failure
    is not a lost connection, or still is at the deadline."""
    deadline = time.monotonic() + RECONNECT_SECONDS
    attempt = 0
    while True:
        if wait_first or attempt:
            time.sleep(_BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS) - 1)])
        attempt += 1
        try:
            return work(), attempt
        except Exception as exc:
            cleanup()
            if not lost(exc) or time.monotonic() >= deadline:
                raise


def landed(
    conn: Connection,
    first_id: int,
    *,
    lost: Callable[[BaseException], bool],
    cleanup: Callable[[], None],
) -> bool:
    """Whether the transaction that inserted event ``first_id`` committed (its
    COMMIT was on its way when the connection was lost). Ids come from a
    sequence and no other transaction holds this one: its row tells."""
    from agentdeck.store.schema import events

    def look() -> bool:
        with conn.begin():
            stmt = sa.select(events.c.id).where(events.c.id == first_id)
            return conn.execute(stmt).first() is not None

    found, _ = again(look, lost=lost, cleanup=cleanup, wait_first=False)
    return found
