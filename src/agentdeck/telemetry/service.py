"""The daemon's telemetry: one follower of the event log feeding the counts of
``/metrics`` and, when OTLP export is on, the spans.

It follows the log through the Deck interface (``Deck.follow``), from where the
log stood when it started; an agent it first meets mid-life (it started before
the daemon did) is read once (``Deck.get_agent``) with its ancestry, so its spans
land in its tree's trace. A follower that fell behind resumes from where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from typing import Protocol

from agentdeck.core.deck import Deck
from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import NotFound
from agentdeck.settings import Settings
from agentdeck.telemetry import claude_env
from agentdeck.telemetry.counts import Tally
from agentdeck.telemetry.spans import SpanData
from agentdeck.telemetry.trace import TraceBuilder

logger = logging.getLogger(__name__)

MAX_ANCESTRY = 64  # parents walked up to find a tree's root
RETRY_SECONDS = 1.0
MAX_UNKNOWN = 10_000  # ids of agents the deck does not know, remembered to skip


class SpanSink(Protocol):
    """Where finished spans go (``telemetry.otlp``): ``export`` must not block."""

    def export(self, spans: list[SpanData]) -> None: ...

    def flush(self) -> None:
        """Send what is queued now (blocking: run in a thread)."""
        ...

    def shutdown(self) -> None:
        """Send what is left and stop (blocking: run in a thread)."""
        ...


class Telemetry:
    def __init__(self, deck: Deck, sink: SpanSink | None = None, ratio: float = 1.0) -> None:
        self.deck = deck
        self.tally = Tally()
        self.sink = sink
        self.builder = TraceBuilder(ratio) if sink is not None else None
        self.started_at = time.time()
        self._unknown: set[str] = set()  # agents the deck does not know (skipped)
        self._task: asyncio.Task[None] | None = None
        self._caught_up = asyncio.Event()

    @property
    def exporting(self) -> bool:
        return self.sink is not None

    async def start(self) -> None:
        after = await self.deck.last_event_id()
        self.tally.last_event_id = after
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
        if self.sink is not None and self.builder is not None:
            self.sink.export(self.builder.close(time.time()))
            await asyncio.to_thread(self.sink.shutdown)

    async def seen(self, event_id: int, timeout: float = 30.0) -> None:
        """Wait until the follower has taken in event ``event_id`` (tests, benchmarks)."""
        async with asyncio.timeout(timeout):
            while self.tally.last_event_id < event_id:
                if self._task is not None and self._task.done():
                    self._task.result()
                    raise RuntimeError("the telemetry follower stopped")
                await asyncio.sleep(0.01)

    async def _follow(self, after: int) -> None:
        position = after
        while True:
            try:
                async for batch in self.deck.follow(after=position):
                    for event in batch:
                        await self._take(event)
                        position = event.id
                return  # the deck stopped
            except SubscriptionDropped as dropped:
                logger.info("telemetry fell behind; resuming at event %d", dropped.position)
                position = max(position, dropped.position)
            except Exception:  # the log could not be read: try again, never end the daemon
                logger.exception("telemetry could not follow the log; retrying")
                await asyncio.sleep(RETRY_SECONDS)

    async def _take(self, event: StoredEvent) -> None:
        self.tally.feed(event)
        if self.builder is None or self.sink is None:
            return
        try:
            if event.type == EventType.AGENT_SPAWNED:
                claude_env.remember_root(event.agent_id, await self._root(event))
            if event.type != EventType.AGENT_SPAWNED and not self.builder.knows(event.agent_id):
                await self._adopt(event.agent_id, event.ts)
            spans = self.builder.feed(event)
        except Exception:  # one odd event must not end the traces of all
            logger.exception("telemetry could not take event %d", event.id)
            return
        if spans:
            self.sink.export(spans)

    async def _root(self, event: StoredEvent) -> str:
        parent = event.data.get("parent_id")
        if not parent:
            return event.agent_id
        if self.builder is None:
            return await self._walk_up(parent)
        root = self.builder.root_of(parent) or await self._walk_up(parent)
        self.builder.learn_root(event.agent_id, root)
        return root

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

    async def _adopt(self, agent_id: str, since: float) -> None:
        if agent_id in self._unknown or self.builder is None:
            return
        try:
            agent = await self.deck.get_agent(agent_id)
        except NotFound:
            if len(self._unknown) >= MAX_UNKNOWN:
                self._unknown.clear()
            self._unknown.add(agent_id)
            return
        root = await self._walk_up(agent.parent_id) if agent.parent_id else agent.id
        self.builder.adopt(agent, root, since)
        claude_env.remember_root(agent.id, root)


# The running telemetry of each deck, for the /metrics route (the web layer knows
# the Deck, not how the daemon was composed).
_RUNNING: weakref.WeakKeyDictionary[object, Telemetry] = weakref.WeakKeyDictionary()


def running(deck: object) -> Telemetry | None:
    return _RUNNING.get(deck)


async def start(deck: Deck, settings: Settings) -> Telemetry:
    """The deck's telemetry, following its log: counts always (cheap, no library),
    spans exported over OTLP/HTTP only when an endpoint is set."""
    sink: SpanSink | None = None
    if settings.otel_endpoint:
        from agentdeck.telemetry.otlp import OtlpSink  # the SDK: only when on

        sink = OtlpSink.from_settings(settings)
    telemetry = Telemetry(deck, sink, settings.otel_sample_ratio)
    await telemetry.start()
    _RUNNING[deck] = telemetry
    if sink is not None:
        logger.info("exporting traces over OTLP/HTTP to %s", settings.otel_endpoint)
    return telemetry
