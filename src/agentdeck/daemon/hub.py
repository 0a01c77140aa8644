"""Fan committed events out to live subscribers (SSE clients, bridges, the TUI).

The store calls us from its writer thread after each commit. One pump task
delivers events strictly in id order: when a batch continues where the last one
ended, it is passed on as it is; when there is a gap (another process wrote to
the same database, or a batch was rolled back), the gap is read back from the
store first. Writes by other processes (another API node, a runner host) wake the
pump at once on PostgreSQL: every committed batch NOTIFYs ``agentdeck_events`` with
its last id (``store.listen``), and an id past what we delivered triggers a read.
A periodic poll (``poll_seconds``) stays as the fallback, and is the only way on
SQLite. A read of the log stops short of what this process wrote and has not yet
told its writers (``Store.unsettled_floor``): our own NOTIFY can wake the pump
before the writer thread has settled the batch, and a follower handed a
``state_changed`` then would ask the session for its agent and find the old state.

Each subscriber has a bounded queue. One that falls behind is dropped — with the
id it had reached, so it can resume from the log (``Last-Event-ID``) — instead of
slowing the others or the runner.

The hub is also the runner's ``PartialSink``: the text being written, coalesced
(``daemon.partials``), goes to the subscribers that asked for it
(``follow_partial``) in order with the events, and is never stored. A partial edit
finds no room in a queue half full: it is left out (the final event shows the
text), never a reason to drop anyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import cast

from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped as SubscriptionDropped  # re-exported
from agentdeck.daemon.partials import PartialCoalescer
from agentdeck.store.listen import EVENTS
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

FeedItem = StoredEvent | PartialText


class Subscription:
    def __init__(
        self,
        hub: EventHub,
        position: int,
        max_batches: int,
        accept: Callable[[StoredEvent], bool] | None,
        partial: Callable[[PartialText], bool] | None = None,
    ) -> None:
        self._hub = hub
        self.position = position  # the last event id handed to the subscriber
        self._accept = accept
        self._partial = partial  # which partial edits it wants (None: none)
        self._queue: asyncio.Queue[list[FeedItem]] = asyncio.Queue(max_batches)
        self.dropped = False
        self.partials_left_out = 0

    def _offer(self, events: Sequence[StoredEvent]) -> None:
        if self.dropped:
            return
        wanted: list[FeedItem] = [e for e in events if self._accept is None or self._accept(e)]
        if not wanted:
            return
        try:
            self._queue.put_nowait(wanted)
        except asyncio.QueueFull:
            self.dropped = True
            logger.info("dropping a slow subscriber at event %d", self.position)

    def _offer_partial(self, edit: PartialText) -> None:
        if self.dropped or self._partial is None or not self._partial(edit):
            return
        if self._queue.qsize() * 2 >= (self._queue.maxsize or 2):
            self.partials_left_out += 1  # room kept for the events it must not miss
            return
        self._queue.put_nowait([edit])

    def _end(self) -> None:
        """The hub stops: wake a waiting subscriber so it notices at once."""
        self.dropped = True
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait([])

    async def next_batch(self, timeout: float | None = None) -> list[FeedItem]:
        """The next events (possibly empty at ``timeout``); raises when dropped."""
        if self.dropped and self._queue.empty():
            raise SubscriptionDropped(self.position)
        try:
            async with asyncio.timeout(timeout):
                batch = await self._queue.get()
        except TimeoutError:
            if self.dropped:
                raise SubscriptionDropped(self.position) from None
            return []
        if not batch:  # the hub's wake-up at stop
            raise SubscriptionDropped(self.position)
        if isinstance(batch[-1], StoredEvent):
            self.position = batch[-1].id
        return batch

    def close(self) -> None:
        self._hub._subscribers.discard(self)


class EventHub:
    def __init__(self, store: Store, *, max_batches: int = 256, poll_seconds: float = 1.0) -> None:
        self.store = store
        self.max_batches = max_batches
        self.poll_seconds = poll_seconds
        self.position = 0  # the last event id delivered to subscribers
        self.notified = 0  # the largest event id another process told us of (NOTIFY)
        self._subscribers: set[Subscription] = set()
        self._inbox: list[StoredEvent] = []
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.partials = PartialCoalescer(self._fan_out_partial)

    # -- the runner's PartialSink ------------------------------------------

    def write(self, agent_id: str, block: str, delta: str, parent_tool_use_id: str | None) -> None:
        # Kept even when no one follows it (one who comes mid-block sees it whole),
        # sent only to those who do.
        live = any(s._partial is not None for s in self._subscribers)
        self.partials.write(agent_id, block, delta, parent_tool_use_id, send=live)

    def end(self, agent_id: str) -> None:
        self.partials.end(agent_id)

    def _fan_out_partial(self, edit: PartialText) -> None:
        for sub in list(self._subscribers):
            sub._offer_partial(edit)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.position = await self.store.last_event_id()
        self._unsubscribe = self.store.subscribe(self._on_commit)
        self.store.listen(EVENTS, self._on_notify)
        self._task = asyncio.create_task(self._pump(), name="event-hub")

    async def stop(self) -> None:
        """Stop delivering; every subscriber is dropped. Safe to call twice."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self.store.unlisten(EVENTS, self._on_notify)
        self.partials.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for sub in list(self._subscribers):
            sub._end()
        self._subscribers.clear()

    def subscribe(
        self,
        accept: Callable[[StoredEvent], bool] | None = None,
        partial: Callable[[PartialText], bool] | None = None,
    ) -> Subscription:
        """Live events after ``self.position`` (read older ones from the store first);
        with ``partial``, the partial edits it accepts between them."""
        sub = Subscription(self, self.position, self.max_batches, accept, partial)
        self._subscribers.add(sub)
        return sub

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        """``follow`` on this hub: the ``EventFeed`` the notifier and streams read."""
        return follow(self, after=after, agent_id=agent_id, heartbeat=heartbeat)

    def follow_partial(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[FeedItem]]:
        """``follow`` with the partial edits of the text being written between the
        events (of ``agent_id``'s, or every agent's)."""
        return _follow(self, after=after, agent_id=agent_id, heartbeat=heartbeat, partial=True)

    def _on_commit(self, events: Sequence[StoredEvent]) -> None:  # the writer thread
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._receive, list(events))

    def _receive(self, events: list[StoredEvent]) -> None:
        self._inbox.extend(events)
        self._wake.set()

    def _on_notify(self, payload: str) -> None:  # the loop: a batch committed somewhere
        try:
            last = int(payload)
        except ValueError:  # "" after the listener's reconnect: look anyway
            self._wake.set()
            return
        if last > max(self.position, self.notified):
            self.notified = last
            self._wake.set()

    async def _pump(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_seconds):
                    await self._wake.wait()
            self._wake.clear()
            inbox, self._inbox = self._inbox, []
            try:
                await self._deliver(sorted(inbox, key=lambda e: e.id))
            except Exception:
                logger.exception("event hub delivery failed; retrying from the log")

    async def _deliver(self, inbox: list[StoredEvent]) -> None:
        fresh = [e for e in inbox if e.id > self.position]
        if inbox and not fresh and self.notified <= self.position:
            return  # already delivered: read from the log before they came
        if fresh and fresh[0].id == self.position + 1 and _contiguous(fresh):
            self._fan_out(fresh)
            if self.notified <= self.position:
                return  # nothing announced past what we wrote ourselves
        # A gap, or nothing of ours: the log is the truth. Up to what this process
        # wrote and has not yet told its writers (a session shows its agent's new
        # state once told): that comes with their commit (``_on_commit``), after.
        while True:
            batch = await self.store.read(after=self.position, limit=5000)
            floor = self.store.unsettled_floor()
            whole = len(batch) == 5000
            if floor is not None and batch and batch[-1].id >= floor:
                batch = [e for e in batch if e.id < floor]
                whole = False
            if not batch:
                return
            self._fan_out(batch)
            if not whole:
                return

    def _fan_out(self, events: list[StoredEvent]) -> None:
        self.position = events[-1].id
        for sub in list(self._subscribers):
            sub._offer(events)


def _contiguous(events: list[StoredEvent]) -> bool:
    return all(b.id == a.id + 1 for a, b in itertools.pairwise(events))


def follow(
    hub: EventHub,
    *,
    after: int,
    agent_id: str | None = None,
    heartbeat: float = 15.0,
    page: int = 1000,
) -> AsyncIterator[list[StoredEvent]]:
    """Events after ``after`` from the log, then live; an empty list every
    ``heartbeat`` seconds of silence. Raises ``SubscriptionDropped`` for a
    subscriber that fell behind (it resumes from the id it reached)."""
    # No partial edits are asked for: every item is an event.
    return cast(
        AsyncIterator[list[StoredEvent]],
        _follow(hub, after=after, agent_id=agent_id, heartbeat=heartbeat, page=page),
    )


async def _follow(
    hub: EventHub,
    *,
    after: int,
    agent_id: str | None = None,
    heartbeat: float = 15.0,
    page: int = 1000,
    partial: bool = False,
) -> AsyncIterator[list[FeedItem]]:
    mine = None if agent_id is None else (lambda e: e.agent_id == agent_id)
    edits = (mine or _every) if partial else None
    sub = hub.subscribe(mine, edits)
    try:
        cursor = after
        live_from = sub.position
        while cursor < live_from:
            batch = await hub.store.read(after=cursor, agent_id=agent_id, limit=page)
            batch = [e for e in batch if e.id <= live_from]
            if not batch:
                break
            cursor = batch[-1].id
            old: list[FeedItem] = list(batch)
            yield old
        cursor = max(cursor, live_from)
        while True:
            try:
                items = await sub.next_batch(timeout=heartbeat)
            except SubscriptionDropped:
                raise SubscriptionDropped(cursor) from None
            fresh = [e for e in items if not isinstance(e, StoredEvent) or e.id > cursor]
            for item in fresh:
                if isinstance(item, StoredEvent):
                    cursor = item.id
            yield fresh
    finally:
        sub.close()


def _every(_: object) -> bool:
    return True
