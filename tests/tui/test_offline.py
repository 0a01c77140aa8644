"""The TUI with no daemon to reach: it stays usable and says it is reconnecting."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from textual.widgets import Static

from agentdeck.tui.app import DeckApp
from agentdeck.tui.feed import FeedState
from agentdeck.tui.link import FixedLocator
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound here, never
    listened on, so no other process (another test worker) can take it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


async def _true(value: object) -> object:
    return value


async def test_no_daemon_shows_reconnecting_and_keys_on_an_empty_table_are_safe(
    refused_port: int,
) -> None:
    app = DeckApp(FixedLocator(f"http://127.0.0.1:{refused_port}", "a-token"))
    async with app.run_test(size=(80, 24)) as pilot:
        await eventually(
            lambda: _true(app.feed_state is FeedState.RECONNECTING), what="reconnecting"
        )
        status = app.query_one("#status", Static)
        assert "reconnecting" in str(status.render()) and status.has_class("reconnecting")
        assert "a-token" not in str(status.render())
        # Moving on an empty table, steering with nothing selected, deciding with an
        # empty inbox: each says so, none of them fails.
        await pilot.press("up", "down", "i", "k", "r", "a", "d", "n", "m")
        messages = [n.message for n in app._notifications]
        assert "no agent selected" in messages and "no pending approval" in messages
        assert "no pending ask" in messages
        assert app.is_running and app.screen is app.screen_stack[0]
        await pilot.press("s", "s")
        assert app.sort == "state" and "sort: state" in str(status.render())
        # The filter box opens with / and Esc closes and clears it.
        await pilot.press("slash", *"abc")
        assert app.filter_text == "abc"
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query_one("#filter").has_class("shown") and app.filter_text == ""
