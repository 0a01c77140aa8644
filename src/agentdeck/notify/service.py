"""The notifier: follows the event log, and per target, one bounded queue and one worker.

Nothing here is on the agents' path or the log's: the notifier is one more
follower of the event feed (``core.ports.EventFeed``: the daemon's hub, handed
in). A target that hangs or fails holds up only its own lane: each attempt has a
deadline (AGENTDECK_NOTIFY_TIMEOUT_SECONDS), failures are retried with exponential
backoff, and what still fails — or finds its lane's queue full — becomes a dead
letter in the store, never a wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx

from agentdeck.core import notify as core
from agentdeck.core.event_types import StoredEvent
from agentdeck.core.notify import Notification, Subject, Target, TargetKind
from agentdeck.core.ports import EventFeed, SubscriptionDropped
from agentdeck.errors import DeliveryFailed, NotFound, Refused
from agentdeck.notify.send import Undelivered, deliver, desktop_available
from agentdeck.settings import Settings
from agentdeck.store.notify import REPLAYED, DeadLetter, DeadLetters
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)


@dataclass
class _Counts:
    delivered: int = 0
    dead: int = 0
    skipped: int = 0
    last_error: str | None = None


class Lane:
    """One target's queue and worker."""

    def __init__(self, notifier: Notifier, target: Target) -> None:
        self.notifier = notifier
        self.target = target
        self.queue: asyncio.Queue[Notification] = asyncio.Queue(notifier.settings.notify_queue_size)
        self.counts = _Counts()
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(notifier.settings.notify_timeout_seconds),
            follow_redirects=False,
            headers={"User-Agent": "agentdeck-notify"},
        )
        self.task: asyncio.Task[None] | None = None

    async def offer(self, n: Notification) -> None:
        """Queue it, or — the queue is full — dead-letter it at once. Never waits."""
        try:
            self.queue.put_nowait(n)
        except asyncio.QueueFull:
            await self.notifier.bury(self, n, "queue full: the target is too slow", attempts=0)

    async def attempt(self, n: Notification) -> None:
        """One delivery under the deadline; ``Undelivered`` says why not."""
        try:
            async with asyncio.timeout(self.notifier.settings.notify_timeout_seconds):
                await deliver(self.target, n, self.http)
        except TimeoutError:
            raise Undelivered(
                f"no answer in {self.notifier.settings.notify_timeout_seconds:g} s"
            ) from None

    async def run(self) -> None:
        while True:
            n = await self.queue.get()
            try:
                await self._handle(n)
            except Exception:  # the lane lives on: the next notification may go through
                logger.exception("notification to %s failed unexpectedly", self.target.name)

    async def _handle(self, n: Notification) -> None:
        settings = self.notifier.settings
        if self.target.kind is TargetKind.DESKTOP and not desktop_available():
            self.counts.skipped += 1  # no desktop here: nothing to retry later
            return
        reason = ""
        for attempt in range(1, settings.notify_attempts + 1):
            try:
                await self.attempt(n)
            except Undelivered as exc:
                reason = self.counts.last_error = exc.reason
                logger.info(
                    "notification to %s failed (attempt %d): %s", self.target.name, attempt, reason
                )
                if attempt < settings.notify_attempts:
                    pause = core.backoff(
                        attempt,
                        base=settings.notify_backoff_seconds,
                        cap=settings.notify_backoff_max_seconds,
                    )
                    await asyncio.sleep(pause)
            else:
                self.counts.delivered += 1
                return
        await self.notifier.bury(self, n, reason, attempts=settings.notify_attempts)


class Notifier:
    def __init__(
        self, settings: Settings, store: Store, hub: EventFeed, targets: list[Target]
    ) -> None:
        self.settings = settings
        self.store = store
        self.hub = hub
        self.dead = DeadLetters(store)
        self.targets = targets
        self.lanes: dict[str, Lane] = {}
        self.base_url = settings.notify_base_url or f"http://{settings.host}:{settings.port}"
        self._pump: asyncio.Task[None] | None = None
        self._subjects: dict[str, Subject] = {}  # an agent's name, project, template stay

    async def start(self, base_url: str | None = None) -> None:
        """Follow the log from now on; ``base_url``: the daemon's own address, for
        links when AGENTDECK_NOTIFY_BASE_URL is not set."""
        if self.settings.notify_base_url is None and base_url is not None:
            self.base_url = base_url
        if not self.targets or self._pump is not None:
            return
        for target in self.targets:
            if target.kind is TargetKind.DESKTOP and not desktop_available():
                logger.warning("notification target %s: notify-send is not on PATH", target.name)
            lane = self.lanes[target.name] = Lane(self, target)
            lane.task = asyncio.create_task(lane.run(), name=f"notify-{target.name}")
        self._pump = asyncio.create_task(self._follow(self.hub.position), name="notify-pump")
        logger.info("notifying %d target(s)", len(self.targets))

    async def stop(self) -> None:
        """Stop at once: what is still queued is not sent (a notification is about now)."""
        tasks = [t for t in [self._pump, *(lane.task for lane in self.lanes.values())] if t]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for lane in self.lanes.values():
            await lane.http.aclose()
        self._pump = None
        self.lanes.clear()

    async def _follow(self, cursor: int) -> None:
        while True:
            try:
                async for batch in self.hub.follow(after=cursor, heartbeat=30.0):
                    for event in batch:
                        cursor = event.id
                        try:
                            await self.dispatch(event)
                        except Exception:
                            logger.exception("could not notify of event %d", event.id)
            except SubscriptionDropped as dropped:
                cursor = dropped.position

    async def dispatch(self, event: StoredEvent) -> None:
        if core.rule_for(event) is None:
            return
        subject = await self._subject(event.agent_id)
        n = core.notification_for(event, subject, self.base_url)
        if n is None:
            return
        for lane in self.lanes.values():
            if core.wants(lane.target, n.kind, subject):
                await lane.offer(n)

    async def _subject(self, agent_id: str) -> Subject:
        known = self._subjects.get(agent_id)
        if known is not None:
            return known
        if len(self._subjects) >= 10_000:
            self._subjects.clear()
        try:
            agent = await self.store.get_agent(agent_id)
        except NotFound:  # an event of an agent the store does not know: none is coming
            subject = Subject(agent_id=agent_id)
        else:
            subject = Subject(
                agent_id=agent.id,
                name=agent.name,
                project=agent.spec.project or agent.cwd,
                template=agent.spec.template or "",
            )
        self._subjects[agent_id] = subject
        return subject

    async def bury(self, lane: Lane, n: Notification, reason: str, *, attempts: int) -> None:
        lane.counts.dead += 1
        lane.counts.last_error = reason
        logger.warning("notification to %s dead-lettered: %s", lane.target.name, reason)
        await self.dead.add(
            target=lane.target.name, kind=n.kind, payload=core.payload(n), reason=reason,
            attempts=attempts,
        )  # fmt: skip

    # -- what the API offers -----------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for target in self.targets:
            lane = self.lanes.get(target.name)
            row = target.describe()
            if target.kind is TargetKind.DESKTOP:
                row["available"] = desktop_available()
            if lane is not None:
                row.update(queued=lane.queue.qsize(), **vars(lane.counts))
            out.append(row)
        return out

    def lane(self, name: str) -> Lane:
        lane = self.lanes.get(name)
        if lane is None:
            raise NotFound(
                "notification target", name, hint="`agentdeck notify list` names the targets"
            )
        return lane

    async def test(self, name: str) -> Notification:
        """Send a test notification to one target now (once, no retry); raise if it fails."""
        lane = self.lane(name)
        n = Notification(
            kind=core.TEST_KIND,
            title="agentdeck test notification",
            message=f"Target {name} works.",
            subject=Subject(agent_id=""),
            ts=time.time(),
            link=self.base_url,
        )
        await self._once(lane, n)
        return n

    async def replay(self, ref: str) -> DeadLetter:
        """Send a dead letter again, now, once: ``replayed`` if it goes through."""
        letter = await self.dead.find(ref)
        if letter.state == REPLAYED:
            raise Refused(f"dead letter {letter.id} was replayed already")
        if letter.target not in self.lanes:
            raise Refused(
                f"dead letter {letter.id} is for target {letter.target!r}, which is no longer "
                "configured",
                hint="add the target back to the notification config and restart the daemon",
            )
        try:
            await self._once(self.lanes[letter.target], core.from_payload(letter.payload))
        except DeliveryFailed as exc:
            await self.dead.settle(letter.id, delivered=False, reason=exc.reason)
            raise
        await self.dead.settle(letter.id, delivered=True)
        return await self.dead.get(letter.id)

    async def _once(self, lane: Lane, n: Notification) -> None:
        try:
            await lane.attempt(n)
        except Undelivered as exc:
            raise DeliveryFailed(lane.target.name, exc.reason) from None
