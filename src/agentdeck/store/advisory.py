"""Named locks across every process and host on one PostgreSQL deck: session-level
advisory locks (``pg_advisory_lock``), each on a connection of its own.

A lock is held by a dedicated connection (autocommit, outside the store's pools,
so that no pooled connection ever goes back to a pool still holding one) for as
long as its ``async with`` lasts, and it goes with that connection: closed at the
end, or dropped by the server when its process dies (a kill -9 closes the socket
at once; a host that vanished is noticed by the server's TCP keepalives, set
short on the session). Waiting is asynchronous (psycopg's own asyncio connection):
no thread is parked while another host merges for minutes, and a cancelled wait
sends the server a cancel. Waiters are granted in the order they asked.

On SQLite there is one home per deck, so one machine: ``held`` takes nothing and
the caller's own lock (a file lock, say) is what serialises.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator

from agentdeck.errors import StoreError
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 10
# A host that vanished without closing its socket: the server probes after 10 s
# idle, every 5 s, and drops the session (and its locks) after 3 unanswered.
_SESSION_OPTIONS = (
    "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3 "
    "-c idle_session_timeout=0 -c statement_timeout=0 -c lock_timeout=0"
)


def lock_key(name: str) -> int:
    """The advisory lock's key for ``name``: the first 8 bytes of its SHA-256 as a
    signed 64-bit integer (stable across processes, hosts and versions, unlike
    ``hash``)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def conninfo(store: Store) -> str | None:
    """The libpq connection string of the store's database; None on SQLite."""
    engine = store._write_engine
    if engine.dialect.name != "postgresql":
        return None
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.asynccontextmanager
async def held(store: Store, name: str) -> AsyncIterator[None]:
    """Hold the deck-wide lock ``name`` for the block (waiting for it first);
    nothing on SQLite. ``StoreError`` if the database cannot be reached: then
    nothing is held and the block does not run."""
    info = conninfo(store)
    if info is None:
        yield
        return
    import psycopg

    key = lock_key(name)
    try:
        conn = await psycopg.AsyncConnection.connect(
            info,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            application_name="agentdeck-lock",
            options=_SESSION_OPTIONS,
        )
    except psycopg.Error as exc:
        raise StoreError(
            f"could not take the lock {name!r} on {store.name}: "
            f"{str(exc).strip() or type(exc).__name__}",
            hint="check that the database is reachable",
        ) from None
    try:
        try:
            await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        except psycopg.Error as exc:
            raise StoreError(
                f"could not take the lock {name!r} on {store.name}: "
                f"{str(exc).strip() or type(exc).__name__}",
                hint="check that the database is reachable",
            ) from None
        yield
    finally:
        # Closing ends the session, and the lock with it: no unlock to forget,
        # and a lock granted just as its wait was cancelled is released too.
        with contextlib.suppress(psycopg.Error):
            await conn.close()
