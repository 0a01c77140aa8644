"""The TUI's live events: the deck's ``follow``, kept going. No UI here.

``EventFeed`` follows the log from a position. When the feed stops (the daemon went
away, or dropped a follower that fell behind: ``SubscriptionDropped``) it reports
``RECONNECTING``, waits a little (growing to a few seconds) and follows again from
the last event it gave, found anew through the link (a restarted daemon may be at
another port): no event is lost or given twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from enum import StrEnum
from typing import cast

from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import AgentdeckError
from agentdeck.tui.link import DeckLink

logger = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 0.2
RETRY_MAX_SECONDS = 3.0


class FeedState(StrEnum):
    CONNECTING = "connecting"
    LIVE = "live"
    RECONNECTING = "reconnecting"


OnEvent = Callable[[StoredEvent], Awaitable[None]]
OnState = Callable[[FeedState, str | None], Awaitable[None]]
OnPartial = Callable[[PartialText], None]


class EventFeed:
    """The deck's events after ``after``, live, followed again after any stop."""

    def __init__(
        self,
        link: DeckLink,
        *,
        after: int,
        on_event: OnEvent,
        on_state: OnState,
        on_partial: OnPartial | None = None,
    ) -> None:
        """``on_partial``: the text being written too (``Deck.follow_partial``)."""
        self.link = link
        self.position = after
        self.on_event = on_event
        self.on_state = on_state
        self.on_partial = on_partial
        self.connections = 0  # how many times the feed went live (1 = never stopped)

    async def run(self) -> None:
        """Until cancelled: follow, and after a stop follow again from ``position``."""
        delay = RETRY_FIRST_SECONDS
        while True:
            opened = self.connections
            try:
                await self._follow()
                problem = "the daemon ended the stream"
            except SubscriptionDropped as exc:
                problem = f"the daemon dropped this follower at event {exc.position}"
            except AgentdeckError as exc:  # DaemonUnavailable, a broken stream
                problem = exc.message
            except (KeyError, TypeError, ValueError) as exc:  # an event that is no event
                problem = f"lost the event stream: {exc!r}"
            if self.connections > opened:  # it was live: try again at once
                delay = RETRY_FIRST_SECONDS
                logger.info("event stream: %s; reconnecting", problem)
            await self.on_state(FeedState.RECONNECTING, problem)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def _follow(self) -> None:
        deck = await self.link.deck()
        follow = deck.follow if self.on_partial is None else deck.follow_partial
        feed = cast(AsyncGenerator[list[StoredEvent | PartialText]], follow(after=self.position))
        async with contextlib.aclosing(feed):
            live = False
            async for batch in feed:
                if not live:  # the first batch (empty: the stream is open) says so
                    live = True
                    self.connections += 1
                    await self.on_state(FeedState.LIVE, None)
                for event in batch:
                    if isinstance(event, PartialText):
                        if self.on_partial is not None:
                            self.on_partial(event)
                    else:
                        await self._deliver(event)

    async def _deliver(self, event: StoredEvent) -> None:
        if event.id <= self.position:
            return  # already seen (a resumed follow never repeats, but be sure)
        self.position = event.id
        await self.on_event(event)
