"""The one write path: a dedicated thread that owns the write connection.

Callers submit ``WorkItem``s (events to append, agent rows to upsert, one
optional extra operation). The thread takes up to ``batch_size`` events' worth
of items at a time, commits them in ONE transaction, then

1. settles the callers' asyncio futures (one ``call_soon_threadsafe`` per loop
   per batch), and
2. only then calls the subscribers with the batch's stored events, in id order.

So no subscriber ever sees an event that is not committed. On PostgreSQL the
batch's transaction also NOTIFYs ``agentdeck_events`` with its last event id when
it wrote events (delivered at COMMIT: ``store.listen``), so other processes' hubs
wake at once. That NOTIFY reaches this process's own hub too, which may then read
the batch from the log before its callers heard it was written (a session sets
its agent's new state once its write is settled): ``unsettled_floor`` is the first
event id of the batches committed (or on their way) whose callers' loops have not
been told yet, and a reader of the log hands on nothing from there until they
have (``daemon.hub``). A store that writes as a runner host has its fenced agents' writes
checked in the same transaction (``store.fencing``): the items of an agent whose
lease the host lost fail with ``Fenced`` and the rest commits. If a batch fails,
it is rolled back and its items are retried one transaction each, so one bad
item fails alone.

A full disk (SQLITE_FULL, ENOSPC) fails the whole batch at once, with
``DiskFull``, and the log says what was not written (which agents' events and
rows; never their text). An item marked ``essential`` (an agent's last state)
is tried once more in the room the store's ``Reserve`` gives back; until there
is room to make the reserve again, only essential items are tried, so that room
stays for them. An essential item that still does not fit is kept (its caller
is told ``DiskFull`` all the same) and written once there is room (looked for
every ``RETRY_SECONDS``, after each write that lands, and at stop), unless a
later write of the same agent's row has landed first: a newer state wins. The
thread goes on either way: writes succeed once there is room again.

On PostgreSQL the connection can be lost (a server restart, the network): a batch
that fails so is tried again, whole, on a new connection, until
``reconnect.RECONNECT_SECONDS`` have passed (then its callers get ``StoreError`` naming the
server). If the connection was lost while COMMIT was on its way, the batch's first
event id says whether it landed (ids come from a sequence: no other transaction
holds them), so a batch is never written twice nor lost.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from agentdeck.core.events import StoredEvent
from agentdeck.core.ports import Subscriber
from agentdeck.errors import AgentdeckError, DiskFull, StoreError
from agentdeck.store import reconnect
from agentdeck.store.dialect import BUSY_TIMEOUT_MS, is_busy_error
from agentdeck.store.fencing import Fences
from agentdeck.store.listen import EVENTS
from agentdeck.store.reserve import Reserve, is_disk_full
from agentdeck.store.rows import stored_event
from agentdeck.store.work import Operation, WorkItem, WorkResult, describe
from agentdeck.store.writes import insert_events, upsert_agent

logger = logging.getLogger(__name__)

FULL_HINT = "free space on its disk; agentdeck writes again once there is room"
RETRY_SECONDS = 2.0
_STOP = object()
_Outcome = tuple[WorkItem, WorkResult | None, BaseException | None]


class Writer:
    def __init__(
        self,
        conn: Connection,
        *,
        batch_size: int,
        name: str = "agentdeck-writer",
        path: Path | None = None,
        reserve: Reserve | None = None,
        where: str | None = None,
        reconnect: Callable[[BaseException], bool] | None = None,
    ):
        self._conn = conn
        self._path = path
        self._where = where or (str(path) if path is not None else "the database")
        self._lost = reconnect  # "the connection was lost": try again once it is back
        self._reserve = reserve
        self._unwritten: list[WorkItem] = []  # essential, kept for when there is room
        self._batch_size = max(1, batch_size)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.fences = Fences()  # the agents whose writes need this host's lease
        self._notify_events = conn.dialect.name == "postgresql"  # NOTIFY at each commit
        # First event ids of batches written (or being committed) whose callers'
        # loops were not told yet: taken on this thread, let go on their loop.
        self._unsettled: set[int] = set()

    def start(self) -> None:
        self._thread.start()

    async def submit(
        self,
        event_rows: Sequence[dict[str, Any]] = (),
        agent_rows: Sequence[dict[str, Any]] = (),
        op: Operation | None = None,
        *,
        essential: bool = False,
    ) -> WorkResult:
        """Queue the work and wait until it is committed (or failed: ``DiskFull``
        when there is no room, else ``StoreError``). ``essential`` work may use
        the room kept in reserve, once."""
        return await self.queue(event_rows, agent_rows, op, essential=essential)

    def queue(
        self,
        event_rows: Sequence[dict[str, Any]] = (),
        agent_rows: Sequence[dict[str, Any]] = (),
        op: Operation | None = None,
        *,
        essential: bool = False,
    ) -> asyncio.Future[WorkResult]:
        """Queue the work now, in order with every other write; the future settles
        once it is committed (or failed, as ``submit`` says)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WorkResult] = loop.create_future()
        self._put(WorkItem(event_rows, agent_rows, op, loop, future, essential))
        return future

    def _put(self, item: WorkItem) -> None:
        if self._closed:
            raise StoreError("the store is closed", hint="open it again to write")
        self._queue.put(item)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def unsettled_floor(self) -> int | None:
        """The first event id of the oldest batch this writer committed, or is
        committing, whose callers' loops have not been told yet (None: none).
        Whoever reads the log must not hand on events from there before they are:
        a caller sets what it shows (its agent's state) once its write is settled."""
        with self._lock:
            return min(self._unsettled, default=None)

    def _let_go(self, first_id: int | None) -> None:
        if first_id is not None:
            with self._lock:
                self._unsettled.discard(first_id)

    def stop(self, timeout: float) -> bool:
        """Commit everything queued so far, stop the thread. Blocking; True if it
        stopped within ``timeout`` seconds."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- the thread -------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[WorkItem] = []
            weight = 0
            try:
                first = self._queue.get(timeout=RETRY_SECONDS if self._unwritten else None)
            except queue.Empty:
                self._write_kept()
                continue
            pending: object | None = first
            while pending is not None:
                if pending is _STOP:
                    stopping = True
                elif isinstance(pending, WorkItem):
                    batch.append(pending)
                    weight += pending.weight
                if weight >= self._batch_size:
                    break
                try:
                    pending = self._queue.get_nowait()
                except queue.Empty:
                    pending = None
            if batch:
                self._process(batch)
        self._fail_leftovers()
        self._write_kept(last=True)
        self._conn.close()

    def _fail_leftovers(self) -> None:
        leftovers: list[_Outcome] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, WorkItem):
                leftovers.append((item, None, StoreError("the store was closed before the write")))
        self._settle(leftovers)

    def _process(self, batch: list[WorkItem], *, reserve_used: bool = False) -> None:
        if not reserve_used:
            self._write_kept()  # older than the batch: first, when there is room
            batch = self._kept_for_ends(batch)
            if not batch:
                return
        try:
            outcomes, stored = self._commit(batch)
        except Exception as exc:  # noqa: BLE001 - the thread must survive any failed write
            self._rolled_back()
            if self._lost is not None and self._lost(exc):
                self._process_again(batch, exc)
                return
            if is_disk_full(exc):
                self._disk_full(batch, exc, reserve_used=reserve_used)
                return
            if len(batch) > 1 and not is_busy_error(exc):
                # Isolate the culprit: the others still commit, each atomically.
                logger.warning(
                    "batch of %d failed (%s); retrying one by one", len(batch), _reason(exc)
                )
                for item in batch:
                    self._process([item])
                return
            logger.error("database write of %d items failed: %s", len(batch), _reason(exc))
            self._settle([(item, None, self._store_error(exc)) for item in batch])
            return
        # Rare (room came back, a kept write superseded): before the callers hear.
        if self._reserve is not None and self._reserve.remake_due():
            self._reserve.make()
        if self._unwritten and not reserve_used:
            self._drop_superseded(batch)
        self._settle(outcomes, stored)
        self._notify(stored)

    def _process_again(self, batch: list[WorkItem], exc: Exception) -> None:
        """The connection was lost: the batch again, whole, on a new one."""
        logger.warning("connection to %s lost (%s); writing again", self._where, _reason(exc))
        assert self._lost is not None
        try:
            (outcomes, stored), tries = reconnect.again(
                lambda: self._commit(batch), lost=self._lost, cleanup=self._rolled_back
            )
        except Exception as again:  # noqa: BLE001 - the thread must survive
            logger.error("database write of %d items failed: %s", len(batch), _reason(again))
            error = StoreError(
                f"cannot write to the {self._where}: {_reason(again)}",
                hint="check that the database server runs and is reachable",
            )
            self._settle([(item, None, error) for item in batch])
            return
        logger.warning("connection to %s back after %d tries", self._where, tries)
        self._settle(outcomes, stored)
        self._notify(stored)

    def _keep(self, items: list[WorkItem]) -> None:
        """Essential items the disk had no room for, to be written once it has
        (their callers were told; nobody waits on these copies)."""
        kept = [
            WorkItem(item.event_rows, item.agent_rows, essential=True)
            for item in items
            if item.essential and item.op is None  # an operation may not be repeated
        ]
        if kept:
            logger.error(
                "the disk is full: kept to be written once there is room: %s", describe(kept)
            )
            self._unwritten += kept

    def _drop_superseded(self, written: list[WorkItem]) -> None:
        ids = {row.get("id") for item in written for row in item.agent_rows}
        if not ids:
            return
        newer = [i for i in self._unwritten if ids & {r.get("id") for r in i.agent_rows}]
        if newer:
            logger.warning("a newer state was written since: dropped %s", describe(newer))
            self._unwritten = [i for i in self._unwritten if i not in newer]

    def _write_kept(self, *, last: bool = False) -> None:
        """Try the kept items again, all in one transaction, when the disk has room
        (by the reserve's measure, when there is one); at ``last`` (stop), what
        still does not fit is said lost."""
        kept = self._unwritten
        if not kept:
            return
        reserve = self._reserve
        if reserve is not None and reserve.spent and not reserve.remake_due() and not last:
            return  # no room yet (the reserve could not be made again)
        try:
            _, stored = self._commit(kept)
        except Exception as exc:  # noqa: BLE001 - kept for the next try
            self._rolled_back()
            if last:
                logger.error("the disk is full: not written, for good: %s", describe(kept))
                self._unwritten = []
            elif not is_disk_full(exc):
                logger.error("kept writes failed (%s), dropped: %s", _reason(exc), describe(kept))
                self._unwritten = []
            return
        self._unwritten = []
        self._let_go(stored[0].id if stored else None)  # nobody waits on these
        logger.warning("written now that the disk has room: %s", describe(kept))
        self._notify(stored)

    def _disk_full(self, batch: list[WorkItem], exc: Exception, *, reserve_used: bool) -> None:
        """No room: the essential items get the reserve's room (once), the rest
        fail now; what is not written is said."""
        essential = [item for item in batch if item.essential]
        reserve = None if reserve_used else self._reserve
        if essential and reserve is not None and reserve.release():
            logger.warning(
                "the disk is full: the room kept for agents' last states (%d KiB) is used now",
                reserve.size // 1024,
            )
            rest = [item for item in batch if not item.essential]
            if rest:
                self._fail_full(rest, exc)
            self._process(essential, reserve_used=True)
            return
        self._fail_full(batch, exc)
        self._keep(batch)

    def _kept_for_ends(self, batch: list[WorkItem]) -> list[WorkItem]:
        """The reserve was spent and the disk has no room to make it again: what
        room there is stays for essential items; the others fail now."""
        reserve = self._reserve
        if reserve is None or not reserve.spent:
            return batch
        if reserve.remake_due() and reserve.make():
            return batch
        held = [item for item in batch if not item.essential]
        if held:
            why = "the room left on its disk is kept for agents' last states"
            self._fail_full(held, DiskFull(self._full_message(why), hint=FULL_HINT))
        return [item for item in batch if item.essential]

    def _fail_full(self, items: list[WorkItem], exc: Exception) -> None:
        logger.error("the disk is full: not written: %s", describe(items))
        self._settle([(item, None, self._store_error(exc)) for item in items])

    def _full_message(self, why: str) -> str:
        where = f"{self._path} " if self._path is not None else "the database "
        return f"the disk is full: {where}could not be written ({why})"

    def _rolled_back(self) -> None:
        """A failed COMMIT can leave the transaction open (SQLite keeps it after
        SQLITE_FULL at commit): end it, or every later write would fail too."""
        if self._conn.in_transaction():
            try:
                self._conn.rollback()
            except Exception:  # the next BEGIN says what is wrong
                logger.exception("rollback after a failed write failed")

    def _commit(self, batch: list[WorkItem]) -> tuple[list[_Outcome], list[StoredEvent]]:
        conn = self._conn
        values: list[Any] = []
        rows: list[dict[str, Any]] = []
        ids: list[int] = []
        refused: dict[WorkItem, AgentdeckError] = {}
        committing = False
        try:
            with conn.begin():
                refused = dict(self.fences.refused(conn, batch))
                if refused:
                    _log_fenced(refused)
                    batch = [item for item in batch if item not in refused]
                rows = [row for item in batch for row in item.event_rows]
                ids = insert_events(conn, rows)
                if ids:  # from here readers of the log may see them (at COMMIT)
                    with self._lock:
                        self._unsettled.add(ids[0])
                if ids and self._notify_events:  # delivered at COMMIT, one per batch
                    conn.exec_driver_sql(f"NOTIFY {EVENTS}, '{ids[-1]}'")
                for item in batch:
                    for agent_row in item.agent_rows:
                        upsert_agent(conn, agent_row)
                    values.append(item.op(conn) if item.op is not None else None)
                committing = True
        except Exception as exc:
            # Lost while COMMIT was on its way: it may have landed. Ids come from
            # a sequence, held by no other transaction: the first one tells.
            lost = self._lost
            landed = bool(committing and ids and lost is not None and lost(exc))
            if landed and lost is not None:
                self._rolled_back()
                landed = reconnect.landed(conn, ids[0], lost=lost, cleanup=self._rolled_back)
            if not landed:
                self._let_go(ids[0] if ids else None)  # never written: nothing to hold
                raise
            logger.warning("the connection was lost at COMMIT, which had landed")
        stored = [stored_event(i, row) for i, row in zip(ids, rows, strict=True)]
        outcomes: list[_Outcome] = [(item, None, error) for item, error in refused.items()]
        start = 0
        for item, value in zip(batch, values, strict=True):
            end = start + len(item.event_rows)
            outcomes.append((item, WorkResult(stored[start:end], value), None))
            start = end
        return outcomes, stored

    def _settle(self, outcomes: list[_Outcome], stored: Sequence[StoredEvent] = ()) -> None:
        """Tell each caller's loop; the batch's events (``stored``) are let go
        (``unsettled_floor``) on the loop once its callers are told, or here when
        no loop waits."""
        first_id = stored[0].id if stored else None
        by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
        for outcome in outcomes:
            loop = outcome[0].loop
            if loop is not None:
                by_loop.setdefault(loop, []).append(outcome)
        waiting = [len(by_loop)]  # loops still to tell; the last one lets go

        def told() -> None:
            with self._lock:
                waiting[0] -= 1
                if waiting[0] == 0 and first_id is not None:
                    self._unsettled.discard(first_id)

        for loop, group in by_loop.items():
            try:
                loop.call_soon_threadsafe(_set_results, group, told)
            except RuntimeError:  # the caller's loop is gone; nobody is waiting
                logger.warning("event loop closed before %d writes were acknowledged", len(group))
                told()
        if not by_loop:
            self._let_go(first_id)

    def _notify(self, stored: list[StoredEvent]) -> None:
        if not stored:
            return
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(stored)
            except Exception:  # one bad subscriber must not stop the log
                logger.exception("event subscriber %r failed", callback)

    def _store_error(self, exc: Exception) -> AgentdeckError:
        if isinstance(exc, AgentdeckError):
            return exc
        err: StoreError
        if is_disk_full(exc):
            err = DiskFull(self._full_message(_reason(exc)), hint=FULL_HINT)
        elif is_busy_error(exc):
            err = StoreError(
                f"the database stayed locked by another process for {BUSY_TIMEOUT_MS / 1000:.0f}s",
                hint="is another agentdeck process stuck? retry, or stop it",
            )
        else:
            err = StoreError(f"database write failed: {_reason(exc)}")
        err.__cause__ = exc
        return err


def _reason(exc: BaseException) -> str:
    """The driver's own words ("database or disk is full"), not SQLAlchemy's
    rendering, which carries the statement's parameters: an agent's text."""
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc)


def _log_fenced(refused: dict[WorkItem, AgentdeckError]) -> None:
    for item, error in refused.items():
        logger.warning("%s: not written: %s", error.message, describe([item]))


def _set_results(group: list[_Outcome], let_go: Callable[[], None] | None = None) -> None:
    """Runs on the caller's event loop: each caller's future settled, then the
    batch's events let go (``Writer.unsettled_floor``): a reader of the log that
    hands them on from now wakes its followers after the callers resume."""
    for item, result, exc in group:
        fut = item.future
        if fut is None or fut.done():  # cancelled: the write happened anyway
            continue
        if exc is not None:
            fut.set_exception(exc)
        else:
            assert result is not None
            fut.set_result(result)
    if let_go is not None:
        let_go()
