"""The TUI's event feed (``feed.EventFeed``): a follower the daemon dropped
(``SubscriptionDropped``, it fell behind) or whose daemon went away follows again
from the last event it gave: none lost, none given twice, and it says when it is
live and when it is reconnecting. The deck is a fake at the Deck seam, so the drop
happens on cue (a real daemon drops only a follower too slow for it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentdeck.core.events import StoredEvent
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import DaemonUnavailable
from agentdeck.tui import feed as feed_module
from agentdeck.tui.feed import EventFeed, FeedState
from tests.support.waiting import eventually
from tests.tui.given import GivenDeck, Offline

pytestmark = pytest.mark.anyio


def event(n: int) -> StoredEvent:
    return StoredEvent(id=n, agent_id="a1", type="cost_updated", ts=0.0, data={"cost_usd": n})


class Dropping(Offline):
    """Each follow is one act: the events it gives, then how it ends. ``afters`` are
    the positions it was asked to follow from."""

    def __init__(self) -> None:
        self.afters: list[int] = []
        self.acts: list[tuple[list[list[StoredEvent]], BaseException | None]] = [
            # Live, three events, then dropped (it fell behind) at the third.
            ([[], [event(1), event(2)], [event(3)]], SubscriptionDropped(3)),
            # The daemon is away.
            ([], DaemonUnavailable("no daemon here (a test)")),
            # Back: an event already given comes again (it must not be shown twice),
            # then a new one; then the stream stays open.
            ([[], [event(3), event(4)]], None),
        ]

    async def follow(self, *, after: int, **kw: object) -> AsyncIterator[list[StoredEvent]]:
        self.afters.append(after)
        batches, end = self.acts.pop(0) if self.acts else ([], None)
        for batch in batches:
            yield batch
        if end is not None:
            raise end
        await asyncio.Event().wait()  # open, quiet, until cancelled


async def test_a_dropped_or_lost_follow_resumes_from_the_last_event_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed_module, "RETRY_FIRST_SECONDS", 0.01)
    deck = Dropping()
    given: list[int] = []
    states: list[tuple[FeedState, str | None]] = []

    async def on_event(e: StoredEvent) -> None:
        given.append(e.id)

    async def on_state(state: FeedState, problem: str | None) -> None:
        states.append((state, problem))

    feed = EventFeed(GivenDeck(deck), after=0, on_event=on_event, on_state=on_state)
    running = asyncio.create_task(feed.run())
    try:
        await eventually(lambda: _true(given == [1, 2, 3, 4]), timeout=10, what="four events")
        await eventually(lambda: _true(len(states) == 4), timeout=10, what="live again")
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    assert deck.afters == [0, 3, 3]  # each time from the last event given
    assert feed.position == 4 and feed.connections == 2
    assert [s for s, _ in states] == [
        FeedState.LIVE, FeedState.RECONNECTING, FeedState.RECONNECTING, FeedState.LIVE,
    ]  # fmt: skip
    assert "dropped this follower at event 3" in str(states[1][1])
    assert states[2][1] == "no daemon here (a test)"


async def _true(value: object) -> object:
    return value
