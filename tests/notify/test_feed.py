"""The notifier follows the ``EventFeed`` it is handed (``core.ports``), not the
daemon's hub by name: a feed that drops it is followed again from where it got."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.events import PermissionRequested, StoredEvent
from agentdeck.core.notify import Target, TargetKind
from agentdeck.core.ports import EventFeed, SubscriptionDropped
from agentdeck.notify.service import Notifier
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.support.receiver import Hung, Receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


class Feed:
    """Hands out one batch a follow, then drops the follower at its last event;
    with nothing left, waits (as a quiet log does)."""

    def __init__(self, batches: list[list[StoredEvent]]) -> None:
        self.position = 0
        self.batches = batches
        self.afters: list[int] = []

    async def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        self.afters.append(after)
        if not self.batches:
            await asyncio.Event().wait()
        batch = self.batches.pop(0)
        yield batch
        raise SubscriptionDropped(batch[-1].id)


async def test_the_notifier_follows_the_feed_it_is_handed_and_resumes_after_a_drop(
    tmp_path: Path, made: list[Receiver | Hung]
) -> None:
    settings = make_settings(tmp_path, notify_timeout_seconds=5)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    try:
        asked = [
            PermissionRequested(
                agent_id="a1", ts=time.time(), request_id=ref, tool="Bash", input={}
            )
            for ref in ("ap1", "ap2")
        ]
        first, second = await store.append(asked)
        feed = Feed([[first], [second]])
        typed: EventFeed = feed  # what the notifier is handed is the port, nothing more
        receiver = Receiver()
        made.append(receiver)
        target = Target(name="ops", kind=TargetKind.WEBHOOK, url=receiver.url)
        notifier = Notifier(settings, store, typed, [target])
        await notifier.start("http://deck.test:8765")
        try:
            await eventually(lambda: _now(len(receiver.received) == 2), what="both requests")
            await eventually(lambda: _now(len(feed.afters) == 3), what="the third follow")
        finally:
            await notifier.stop()
        assert feed.afters == [0, first.id, second.id]
    finally:
        await store.close()


async def _now(value: bool) -> bool:
    return value
