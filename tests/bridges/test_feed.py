"""The bridge's event feed (``bridges.daemon.feed``) over the Deck interface: a
daemon down when the feed starts, a daemon that restarts mid-stream, a stream the
daemon drops, each followed again after the last event given: nothing lost,
nothing twice, in order. On the real daemon (a fixed port, so the restarted one
is at the same address), the real CLI and the scripted model.

And the view that acts for a chat member shares the bridge's connection, and names
a member whatever their name is written in."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentdeck.bridges import daemon
from agentdeck.bridges.daemon import connect, feed
from agentdeck.bridges.platform import Actor
from agentdeck.bridges.text import _who, resolved_text
from agentdeck.client.deck import RemoteDeck
from agentdeck.core.agent import AgentSpec
from agentdeck.core.events import StoredEvent
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.errors import ConfigError, DaemonUnavailable
from tests.bridges.test_core_daemon import _audit
from tests.conftest import make_settings
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextlib.asynccontextmanager
async def collecting(deck: Any, **where: Any) -> AsyncIterator[list[StoredEvent]]:
    """The feed's events, as they come, until the block ends."""
    got: list[StoredEvent] = []

    async def run() -> None:
        async for event in feed(deck, **where):
            got.append(event)

    task = asyncio.create_task(run())
    try:
        yield got
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


def turns_done(got: list[StoredEvent], agent_id: str) -> int:
    return sum(1 for e in got if e.agent_id == agent_id and e.type == "turn_completed")


async def test_the_feed_waits_for_a_daemon_down_at_start_and_follows_it_across_a_restart(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, port=free_port())
    url = f"http://{settings.host}:{settings.port}"
    async with serving(settings) as served:  # the home's token, for the deck made below
        token = served.token
    deck = connect(url, token)
    try:
        with pytest.raises(DaemonUnavailable):
            await deck.last_event_id()
        async with collecting(deck, after=0) as got:
            async with serving(settings):
                agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
                await eventually(
                    _async(lambda: turns_done(got, agent.id) >= 1), timeout=60, what="turn 1"
                )
            # The daemon is gone: the feed tries again until it is back.
            async with serving(settings):
                await deck.send(agent.id, "and again")
                await eventually(
                    _async(lambda: turns_done(got, agent.id) >= 2), timeout=60, what="turn 2"
                )
                logged = await deck.events(after=0, limit=100_000)
        ids = [e.id for e in got]
        assert ids == sorted(set(ids)), "in order, each once"
        assert ids == [e.id for e in logged if e.id <= ids[-1]], "nothing lost"
    finally:
        await deck.aclose()


class DroppingDeck:
    """The real deck, whose live feed the daemon drops once, after ``after_events``
    events, as it drops a follower that fell behind (``SubscriptionDropped``, with
    the id it reached)."""

    def __init__(self, deck: RemoteDeck, after_events: int) -> None:
        self.deck = deck
        self.left = after_events
        self.drops = 0
        self.follows: list[int] = []

    async def follow(self, *, after: int, agent_id: str | None = None) -> AsyncIterator[Any]:
        self.follows.append(after)
        async for batch in self.deck.follow(after=after, agent_id=agent_id):
            for event in batch:
                if self.drops == 0 and self.left == 0:
                    self.drops += 1
                    raise SubscriptionDropped(event.id - 1)
                self.left -= 1
                yield [event]


async def test_a_dropped_stream_is_followed_again_after_the_last_event_given(
    settings: Any,
) -> None:
    async with serving(settings) as served:
        deck = connect(served.info.url, served.token)
        try:
            agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
            dropping = DroppingDeck(deck, after_events=3)
            async with collecting(dropping, after=0, agent_id=agent.id) as got:
                await eventually(
                    _async(lambda: turns_done(got, agent.id) >= 1), timeout=60, what="the turn"
                )
            logged = await deck.events(agent_id=agent.id, limit=100_000)
        finally:
            await deck.aclose()
    assert dropping.drops == 1
    assert dropping.follows[:2] == [0, got[2].id], "followed again after the third event"
    ids = [e.id for e in got]
    assert ids == [e.id for e in logged if e.id <= ids[-1]], "in order, each once, none lost"


async def test_a_deck_acting_for_a_member_shares_the_bridges_connection(settings: Any) -> None:
    async with serving(settings) as served:
        deck = connect(served.info.url, served.token)
        try:
            async with deck.acting_for("memory:1:alice") as alice:
                agent = await alice.create_agent(AgentSpec(prompt="hello", scenario="chat"))
            # Closing the member's view left the bridge's connection open.
            assert (await deck.get_agent(agent.id)).id == agent.id
        finally:
            await deck.aclose()
    [started] = [e for e in await _audit(settings) if e.tool == "chat:start"]
    assert started.answered_by == "user:bridge:memory:1:alice"


def test_a_home_without_a_daemon_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as none:
        daemon.for_home(make_settings(tmp_path))
    assert "no agentdeck daemon runs for" in none.value.message
    assert "agentdeck up" in str(none.value.hint)


def _async(probe: Any) -> Any:
    async def run() -> Any:
        return probe()

    return run


async def test_a_member_named_beyond_ascii_acts_and_is_named_in_full(settings: Any) -> None:
    """An HTTP header carries ASCII only: the name goes percent-encoded (it was a
    UnicodeEncodeError on every call of a member named Zoë), and chat shows it whole."""
    zoe = Actor("memory", "3", "Zoë 渡辺 100%")
    async with serving(settings) as served:
        deck = connect(served.info.url, served.token)
        try:
            await deck.acting_for(zoe.tag).create_agent(AgentSpec(prompt="hi", scenario="chat"))
        finally:
            await deck.aclose()
    [started] = [e for e in await _audit(settings) if e.tool == "chat:start"]
    assert started.answered_by == "user:bridge:memory:3:Zo%C3%AB %E6%B8%A1%E8%BE%BA 100%25"
    assert resolved_text("Allow?", "allow", started.answered_by, None).endswith(
        "Allowed by Zoë 渡辺 100%."
    )


def test_a_members_tag_stays_within_what_the_daemon_takes() -> None:
    """The daemon names a member only from a printable header of 200 characters
    at most: a long name beyond ASCII is cut, never an escape in two."""
    for name in ("渡" * 200, "a" * 300, "é" * 70 + "%" * 70):
        tag = Actor("discord", "123456789012345678", name).tag
        assert len(tag) <= 200 and tag.isascii() and tag.isprintable(), tag
        shown = _who(f"user:bridge:{tag}")
        assert shown and name.startswith(shown), (tag, shown)
    assert Actor("slack", "U1", "\n:").tag == "slack:U1:U1"


class _OneBatchThenSilence:
    """The Deck's follow, at its seam: one batch, then nothing; says when closed."""

    def __init__(self) -> None:
        self.closed = False

    async def follow(
        self, *, after: int, agent_id: str | None = None, heartbeat: float = 15.0
    ) -> AsyncIterator[list[StoredEvent]]:
        try:
            yield [StoredEvent(id=after + 1, agent_id="a1", type="notice", ts=0.0, data={})]
            await asyncio.Event().wait()
        finally:
            self.closed = True


async def test_closing_the_feed_closes_its_stream_at_once() -> None:
    """A bridge that stops mid-event closes the feed; the stream under it closes then,
    not when the collector finds it (with the loop gone by then, its connection was
    an unclosed transport warned about in whatever test ran next)."""
    deck = _OneBatchThenSilence()
    events = feed(deck, after=0)
    first = await anext(events)
    assert first.id == 1 and not deck.closed
    await events.aclose()
    assert deck.closed
