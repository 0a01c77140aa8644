"""PostgreSQL's LISTEN/NOTIFY for wake-ups across processes and hosts, with polling
as the fallback (and the only way on SQLite, where nothing here runs).

A ``Listener`` owns one dedicated psycopg 3 connection (autocommit, outside the
store's pools) in a daemon thread that LISTENs on every channel a callback was
registered for, and hands each notification's payload to the callbacks on their
own event loops (``loop.call_soon_threadsafe``). When the server goes away (a
restart, the network) the thread connects again with a growing backoff, and says
so in the log once per outage; notifications sent meanwhile are lost, so once it
listens again every callback is called with an empty payload: "something may have
happened, look". ``close`` stops the thread.

Senders NOTIFY inside their write transaction (``send``), so a notification is
delivered at COMMIT, after what it announces is visible. The store's writer sends
``EVENTS`` with the batch's last event id after each batch that wrote events;
``enqueue_command`` sends ``COMMANDS`` with the agent id.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable

from sqlalchemy.engine import Connection

from agentdeck.errors import UsageError

logger = logging.getLogger(__name__)

EVENTS = "agentdeck_events"  # payload: the last event id of a committed batch
QUEUE = "agentdeck_queue"  # payload: an agent id queued for a runner host
COMMANDS = "agentdeck_commands"  # payload: the agent id a steering command is for
CHANNELS = (EVENTS, QUEUE, COMMANDS)

WAIT_SECONDS = 0.5  # how often the thread looks up from its socket (new channels, stop)
CONNECT_TIMEOUT_SECONDS = 10
_BACKOFF_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
_CHANNEL = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_MAX_PAYLOAD = 7999  # PostgreSQL's limit is 8000 bytes

Callback = Callable[[str], None]


def check_channel(channel: str) -> str:
    """A channel is an identifier of ours (it is written into SQL): lower-case
    letters, digits and ``_``, at most 63."""
    if not isinstance(channel, str) or _CHANNEL.fullmatch(channel) is None:
        raise UsageError(
            f"bad notification channel {channel!r}",
            hint="lower-case letters, digits and '_', at most 63, not starting with a digit",
        )
    return channel


def check_payload(payload: str) -> str:
    if not isinstance(payload, str) or len(payload.encode()) > _MAX_PAYLOAD or "\x00" in payload:
        raise UsageError(
            "a notification's payload is a short text (under 8000 bytes, no NUL)",
            hint="send an id, and let the listener read the rest from the store",
        )
    return payload


def send(conn: Connection, channel: str, payload: str = "") -> None:
    """NOTIFY inside the open write transaction (delivered at its COMMIT); nothing
    on SQLite."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SELECT pg_notify(%s, %s)", (channel, payload))


class Listener:
    """The LISTEN thread of one store (PostgreSQL only)."""

    def __init__(self, conninfo: str, *, where: str) -> None:
        self._conninfo = conninfo
        self._where = where  # what messages call the database: never a password
        self._callbacks: dict[str, list[tuple[asyncio.AbstractEventLoop, Callback]]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()  # set while LISTENing (tests wait on it)
        self.connections = 0  # how many times it connected (1 + reconnections)

    def add(self, channel: str, callback: Callback, loop: asyncio.AbstractEventLoop) -> None:
        check_channel(channel)
        with self._lock:
            self._callbacks.setdefault(channel, []).append((loop, callback))
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="agentdeck-listener", daemon=True
                )
                self._thread.start()

    def remove(self, channel: str, callback: Callback) -> None:
        with self._lock:
            kept = [(lp, cb) for lp, cb in self._callbacks.get(channel, []) if cb != callback]
            self._callbacks[channel] = kept

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the thread (it looks up every ``WAIT_SECONDS``). Blocking; True if
        it stopped within ``timeout``."""
        self._stop.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    # --- the thread -------------------------------------------------------

    def _run(self) -> None:
        import psycopg

        failures = 0
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._conninfo,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    application_name="agentdeck-listener",
                ) as conn:
                    self.connections += 1
                    if failures:
                        logger.warning(
                            "listening to %s again after %d tries", self._where, failures
                        )
                        self._wake_all()  # what was sent meanwhile is lost: look
                    failures = 0
                    self._listen(conn)
            except psycopg.Error as exc:
                self.connected.clear()
                if self._stop.is_set():
                    break
                if failures == 0:
                    logger.warning(
                        "lost the notification connection to %s (%s); polling until it is back",
                        self._where,
                        str(exc).strip() or type(exc).__name__,
                    )
                self._stop.wait(_BACKOFF_SECONDS[min(failures, len(_BACKOFF_SECONDS) - 1)])
                failures += 1
        self.connected.clear()

    def _listen(self, conn: object) -> None:
        import psycopg

        assert isinstance(conn, psycopg.Connection)
        listening: set[str] = set()
        while not self._stop.is_set():
            with self._lock:
                wanted = set(self._callbacks)
            for channel in sorted(wanted - listening):
                conn.execute(f"LISTEN {check_channel(channel)}")
                listening.add(channel)
            self.connected.set()
            for note in conn.notifies(timeout=WAIT_SECONDS):
                self._dispatch(note.channel, note.payload)

    def _dispatch(self, channel: str, payload: str) -> None:
        with self._lock:
            targets = list(self._callbacks.get(channel, ()))
        for loop, callback in targets:
            try:
                loop.call_soon_threadsafe(_call, callback, payload)
            except RuntimeError:  # that loop is closed: nobody listens there
                self.remove(channel, callback)

    def _wake_all(self) -> None:
        with self._lock:
            channels = list(self._callbacks)
        for channel in channels:
            self._dispatch(channel, "")


def _call(callback: Callback, payload: str) -> None:
    """On the callback's loop: one failing callback does not stop the others."""
    try:
        callback(payload)
    except Exception:
        logger.exception("notification callback %r failed", callback)
