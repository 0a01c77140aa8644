"""The store's parts for a deck on several machines (``Store`` inherits them):
fenced writes for a runner host (``store.fencing``) and LISTEN/NOTIFY wake-ups
(``store.listen``), which do nothing on SQLite, where callers poll."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

from sqlalchemy.engine import Engine

from agentdeck.errors import StoreError
from agentdeck.store import listen as notifications
from agentdeck.store.listen import Listener, check_channel, check_payload
from agentdeck.store.work import WorkResult
from agentdeck.store.writer import Writer

LISTENER_STOP_SECONDS = 5.0


class ClusterParts:
    _writer: Writer
    _write_engine: Engine
    _listener: Listener | None
    _closed: bool
    name: str

    # --- fenced writes ---------------------------------------------------

    def fence_as(self, host: str) -> None:
        """This store writes as runner host ``host``: the fences ``fence`` sets
        name it. ``UsageError`` for a bad host name."""
        self._writer.fences.fence_as(host)

    def fence(self, agent_id: str, token: int) -> None:
        """From now on every write for ``agent_id`` (events with that agent id,
        its agent row) needs this store's host to hold the agent's lease with
        ``token`` at commit time; a write it no longer holds fails with ``Fenced``
        and nothing of it is written (the rest of its batch commits). Writes
        queued before the call are checked too if not yet committed. Needs
        ``fence_as`` first (``UsageError``)."""
        self._writer.fences.fence(agent_id, token)

    def unfence(self, agent_id: str) -> None:
        """Writes for ``agent_id`` are no longer checked (the host let it go)."""
        self._writer.fences.unfence(agent_id)

    # --- notifications ---------------------------------------------------

    @property
    def listens(self) -> bool:
        """Whether this store can be woken by other processes' notifications
        (PostgreSQL); on SQLite ``listen`` does nothing and callers poll."""
        return self._write_engine.dialect.name == "postgresql"

    def listen(self, channel: str, callback: Callable[[str], None]) -> None:
        """Call ``callback(payload)`` on the calling event loop for each NOTIFY on
        ``channel`` (from any process on the database, this one's included);
        several callbacks per channel. After the connection was lost and is back,
        every callback is called once with ``""`` (what was sent meanwhile is
        lost: look). Nothing on SQLite. Call from a running event loop."""
        check_channel(channel)
        if not self.listens:
            return
        if self._closed:
            raise StoreError("the store is closed", hint="open it again to listen")
        loop = asyncio.get_running_loop()
        if self._listener is None:
            url = self._write_engine.url.set(drivername="postgresql")
            self._listener = Listener(url.render_as_string(hide_password=False), where=self.name)
        self._listener.add(channel, callback, loop)

    def unlisten(self, channel: str, callback: Callable[[str], None]) -> None:
        """``callback`` is no longer called for ``channel``."""
        if self._listener is not None:
            self._listener.remove(channel, callback)

    def notify(self, channel: str, payload: str = "") -> Awaitable[None]:
        """NOTIFY ``channel`` with ``payload`` through the writer, queued now: it
        is delivered after the commit of every write queued before it. Settles
        once sent (at once on SQLite, where it does nothing)."""
        check_channel(channel)
        check_payload(payload)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not self.listens:
            done.set_result(None)
            return done
        sent = self._writer.queue(
            op=functools.partial(notifications.send, channel=channel, payload=payload)
        )
        sent.add_done_callback(functools.partial(_pass_on, done))
        return done

    def _stop_listening(self) -> bool:
        """Stop the listener's thread (blocking); True if it stopped in time."""
        if self._listener is None:
            return True
        return self._listener.close(LISTENER_STOP_SECONDS)


def _pass_on(done: asyncio.Future[None], sent: asyncio.Future[WorkResult]) -> None:
    if done.done():
        return
    if sent.cancelled():
        done.cancel()
    elif (exc := sent.exception()) is not None:
        done.set_exception(exc)
    else:
        done.set_result(None)
