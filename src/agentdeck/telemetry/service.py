"""The daemon's telemetry: one follower of the event log feeding the counts of
``/metrics`` and, when OTLP export is on, the spans.

It follows the log through the Deck interface (``Deck.follow``), from where the
log stood when it started. For the spans it does the least it can on the loop: a
type check and a look-up per event, and a frame per batch to the span exporter's
own process (``telemetry.child``) saying how far the log is settled; that process
reads the events from the database itself and builds, encodes and posts the
spans. What only the deck can say is looked up here and sent where it falls in
the log (``telemetry.records``): the root of a spawned agent's tree, and an agent
first met mid-life (it started before the daemon did), read once
(``Deck.get_agent``) with its ancestry so its spans land in its tree's trace. A
follower that fell behind resumes from where it was. An exporter's process that
ended is started again by ``child``, reading from where the follower is then; its
agents are met again here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections import OrderedDict
from typing import Protocol

from agentdeck.core.deck import Deck
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import NotFound
from agentdeck.settings import Settings
from agentdeck.telemetry import claude_env
from agentdeck.telemetry.counts import Tally
from agentdeck.telemetry.records import (
    ADOPT,
    CLOSE,
    FROM,
    KEEP,
    NO_SPAN,
    ROOT,
    UPTO,
    LogReader,
    Record,
    SpanSink,
    Tracer,
    spanned,
)

logger = logging.getLogger(__name__)

MAX_ANCESTRY = 64  # parents walked up to find a tree's root
RETRY_SECONDS = 1.0
MAX_MET = 10_000  # agents whose tree the exporter was told (one forgotten is met again)

__all__ = ["SpanSink", "Telemetry", "running", "start"]


class Spans(Protocol):
    """Where the records of spans go: the exporter's process (``child``), or a
    ``Tracer`` in this process (``InProcess``: tests)."""

    pending: list[Record]  # records to send (appended to on the follower's path)
    dropped: int  # records that never reached the exporter (it was gone or too far behind)
    generation: int  # exporters started again after one ended: what it knew is gone

    def send(self) -> bool:
        """What is pending, on its way now (never waits); False: it was dropped."""
        ...

    async def flush(self) -> None:
        """Wait until every span of what was sent has gone out."""
        ...

    async def stop(self, now: float) -> None:
        """What is open ends now; the rest is sent; nothing more goes."""
        ...


class InProcess:
    """Records traced here, into ``sink``, the events read from ``log`` (tests;
    what the worker does)."""

    def __init__(self, sink: SpanSink, ratio: float, log: LogReader | None = None) -> None:
        self.tracer = Tracer(sink, ratio, log)
        self.pending: list[Record] = []
        self.dropped = 0
        self.generation = 0

    def send(self) -> bool:
        records, self.pending = self.pending, []
        for record in records:
            self.tracer.apply(record)
        self.tracer.catch_up()
        return True

    async def flush(self) -> None:
        await asyncio.to_thread(self.tracer.sink.flush)

    async def stop(self, now: float) -> None:
        self.send()
        self.tracer.apply((CLOSE, now))
        await asyncio.to_thread(self.tracer.sink.shutdown)


class Telemetry:
    def __init__(
        self,
        deck: Deck,
        sink: SpanSink | None = None,
        ratio: float = 1.0,
        *,
        spans: Spans | None = None,
        log: LogReader | None = None,
    ) -> None:
        self.deck = deck
        self.tally = Tally()
        self.ratio = ratio
        self.spans: Spans | None = spans or (InProcess(sink, ratio, log) if sink else None)
        self.started_at = time.time()
        # Agents met: the exporter was told their tree (or the deck does not know them).
        self._met: OrderedDict[str, None] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self.taken = 0  # the last event taken in (its records sent)
        self._generation = 0  # the exporter's the agents met were told to

    @property
    def exporting(self) -> bool:
        return self.spans is not None

    @property
    def dropped(self) -> int:
        """Records of spans dropped on their way to the exporter, since the start."""
        return self.spans.dropped if self.spans is not None else 0

    @property
    def restarts(self) -> int:
        """Span exporters started again after one ended on its own, since the start."""
        return self.spans.generation if self.spans is not None else 0

    async def start(self) -> None:
        after = await self.deck.last_event_id()
        self.tally.last_event_id = self.taken = after
        if self.spans is not None:  # the exporter reads the log from here
            self.spans.pending.append((FROM, after))
            self.spans.send()
        self._task = asyncio.create_task(self._follow(after), name="telemetry")

    async def stop(self) -> None:
        """Stop following; the spans still open end now and everything is sent."""
        if _RUNNING.get(self.deck) is self:  # the value holds its key: never freed else
            del _RUNNING[self.deck]
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.spans is not None:
            await self.spans.stop(time.time())

    async def flush(self) -> None:
        """Wait until the spans of what the follower took in have gone out."""
        if self.spans is not None:
            await self.spans.flush()

    async def seen(self, event_id: int, timeout: float = 30.0) -> None:
        """Wait until the follower has taken in event ``event_id`` (tests, benchmarks)."""
        async with asyncio.timeout(timeout):
            while self.taken < event_id:
                if self._task is not None and self._task.done():
                    self._task.result()
                    raise RuntimeError("the telemetry follower stopped")
                await asyncio.sleep(0.01)

    async def _follow(self, after: int) -> None:
        position = after
        while True:
            try:
                async for batch in self.deck.follow(after=position):
                    spans = self.spans
                    if spans is not None and spans.generation != self._generation:
                        self._met.clear()  # a new exporter: each agent is met again
                        self._generation = spans.generation
                        spans.pending.append((FROM, position))  # and the log read from here
                    try:
                        for event in batch:
                            await self._take(event)
                            position = event.id
                    finally:
                        if spans is not None:
                            spans.pending.append((UPTO, position))
                            spans.send()
                        self.taken = position
                return  # the deck stopped
            except SubscriptionDropped as dropped:
                logger.info("telemetry fell behind; resuming at event %d", dropped.position)
                position = max(position, dropped.position)
            except Exception:  # the log could not be read: try again, never end the daemon
                logger.exception("telemetry could not follow the log; retrying")
                await asyncio.sleep(RETRY_SECONDS)

    async def _take(self, event: StoredEvent) -> None:
        self.tally.feed(event)
        spans = self.spans
        if spans is None:
            return
        # On the path of every event: kept plain (a look-up or two; no call).
        keep = KEEP.get(event.type, NO_SPAN)
        if keep is NO_SPAN:  # it makes no span: nothing more for it
            return
        # The event itself is read from the log by the exporter; what it needs to
        # know first (the agent's tree), it is told here, where it falls in the log.
        if event.type == EventType.AGENT_SPAWNED or event.agent_id not in self._met:
            spans.pending.append((UPTO, event.id - 1))
            await self._meet(event, spans)

    async def _meet(self, event: StoredEvent, spans: Spans) -> None:
        """Tell the exporter the root of a spawned agent's tree, or an agent first met
        mid-life with its tree's root (read from the deck, once)."""
        if spanned(event) is NO_SPAN:  # a notice not of a merge: nothing to meet for
            return
        agent_id = event.agent_id
        try:
            if event.type == EventType.AGENT_SPAWNED:
                parent = event.data.get("parent_id")
                root = await self._walk_up(parent) if parent else agent_id
                claude_env.remember_root(agent_id, root)
                spans.pending.append((ROOT, agent_id, root))
            else:
                try:
                    agent = await self.deck.get_agent(agent_id)
                except NotFound:  # not an agent the deck knows: its events make no span
                    self._remember(agent_id)
                    return
                root = await self._walk_up(agent.parent_id) if agent.parent_id else agent.id
                claude_env.remember_root(agent.id, root)
                spans.pending.append((ADOPT, agent.to_dict(), root, event.ts))
        except Exception:  # one odd event must not end the traces of all
            logger.exception("telemetry could not take event %d", event.id)
            return
        self._remember(agent_id)

    def _remember(self, agent_id: str) -> None:
        self._met[agent_id] = None
        if len(self._met) > MAX_MET:
            self._met.popitem(last=False)

    async def _walk_up(self, agent_id: str) -> str:
        """The root of ``agent_id``'s tree, read from the deck."""
        current = agent_id
        for _ in range(MAX_ANCESTRY):
            known = claude_env.root_of(current)
            if known is not None:
                return known
            try:
                agent = await self.deck.get_agent(current)
            except NotFound:
                return current
            if agent.parent_id is None:
                return current
            current = agent.parent_id
        return current


# The running telemetry of each deck, for the /metrics route (the web layer knows
# the Deck, not how the daemon was composed).
_RUNNING: weakref.WeakKeyDictionary[object, Telemetry] = weakref.WeakKeyDictionary()


def running(deck: object) -> Telemetry | None:
    return _RUNNING.get(deck)


async def start(deck: Deck, settings: Settings) -> Telemetry:
    """The deck's telemetry, following its log: counts always (cheap, no library),
    spans exported over OTLP/HTTP by a process of their own only when an endpoint
    is set."""
    spans: Spans | None = None
    if settings.otel_endpoint:
        from agentdeck.telemetry.child import ExportChild

        spans = await ExportChild.start(settings)
    telemetry = Telemetry(deck, ratio=settings.otel_sample_ratio, spans=spans)
    await telemetry.start()
    _RUNNING[deck] = telemetry
    if spans is not None:
        logger.info("exporting traces over OTLP/HTTP to %s", settings.otel_endpoint)
    return telemetry
