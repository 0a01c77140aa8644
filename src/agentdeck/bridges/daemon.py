"""The bridge's way to the daemon: the Deck interface over its API (``RemoteDeck``),
and its event feed, followed for ever.

A bridge is a client like the CLI and the dashboard: it never opens the store or
drives the runner. It says who it is (``X-Agentdeck-Client: bridge``) and, for what
a chat member does, who did it (``RemoteDeck.acting_for``, the
``X-Agentdeck-Actor`` header), so the daemon's audit log and ``answered_by`` name
the member. The feed is resumed after the last event it gave, whatever broke it: a
daemon that restarted, a stream the daemon dropped because the bridge fell behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any, cast

from agentdeck.client import locate
from agentdeck.client.deck import RemoteDeck
from agentdeck.client.http import DaemonHTTP
from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import ConfigError, DaemonUnavailable

logger = logging.getLogger(__name__)

RECONNECT_SECONDS = 1.0
REQUEST_SECONDS = 60.0
CONNECT_SECONDS = 5.0


def connect(url: str, token: str) -> RemoteDeck:
    """The deck of the daemon at ``url``, on a bridge's connection of its own."""
    http = DaemonHTTP(
        url, token, client="bridge", read_seconds=REQUEST_SECONDS, connect_seconds=CONNECT_SECONDS
    )
    return RemoteDeck(http, owns_http=True)


def for_home(home: Any) -> RemoteDeck:
    """The deck of the daemon running for a home (an object with ``home_dir``)."""
    found = locate.recorded(home.home_dir)
    if found is None:
        raise ConfigError(
            f"no agentdeck daemon runs for {home.home_dir}",
            hint="start it first: `agentdeck up`",
        )
    info, token = found
    return connect(info.url, token)


def feed(deck: Deck, *, after: int, agent_id: str | None = None) -> AsyncGenerator[StoredEvent]:
    """Events after ``after`` (of one agent, or all), for ever: a stream that broke,
    ended or was dropped is followed again after the last event given. Any other
    error (the agent is unknown) ends the feed. Close it (``contextlib.aclosing``)
    when done: its stream is closed then, not when the collector finds it."""
    # No partial edits asked for: every item is an event.
    return cast(AsyncGenerator[StoredEvent], _feed(deck, after, agent_id, partial=False))


def feed_partial(
    deck: Deck, *, after: int, agent_id: str | None = None
) -> AsyncGenerator[StoredEvent | PartialText]:
    """``feed``, with the edits of the text being written between the events."""
    return _feed(deck, after, agent_id, partial=True)


async def _feed(
    deck: Deck, after: int, agent_id: str | None, *, partial: bool
) -> AsyncGenerator[StoredEvent | PartialText]:
    position = after
    while True:
        try:
            follow = deck.follow_partial if partial else deck.follow
            stream = cast(
                AsyncGenerator[list[StoredEvent | PartialText]],
                follow(after=position, agent_id=agent_id),
            )
            async with contextlib.aclosing(stream):
                async for batch in stream:
                    for event in batch:
                        if isinstance(event, StoredEvent):
                            position = event.id
                        yield event
        except DaemonUnavailable as exc:
            logger.info("event stream broke at %d (%r); reconnecting", position, exc)
        except SubscriptionDropped as exc:
            logger.info("event stream dropped at %d (the bridge fell behind)", exc.position)
        await asyncio.sleep(RECONNECT_SECONDS)
