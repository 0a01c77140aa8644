"""Opening the same agent again while its page is being read: the first read is
cancelled and the pane stays loading until the newer one fills it (a cancelled read
once left it "loaded" and empty). The deck is the app's own seam, answering from
memory; no daemon."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentdeck.core.events import StoredEvent
from agentdeck.tui.app import DeckApp
from agentdeck.tui.transcript import TranscriptView
from tests.support.waiting import eventually
from tests.tui.given import GivenDeck, Offline

pytestmark = pytest.mark.anyio


async def _true(value: Any) -> Any:
    return value


async def test_a_read_cancelled_by_a_newer_one_leaves_the_pane_to_the_newer() -> None:
    released = asyncio.Event()
    reads = 0

    class Paged(Offline):
        async def events_before(self, *, agent_id: str, **kw: Any) -> list[StoredEvent]:
            nonlocal reads
            reads += 1
            await released.wait()
            text = {"text": "hello from the page"}
            return [StoredEvent(id=5, agent_id=agent_id, type="assistant_text", ts=0, data=text)]

    async def position() -> int:
        return 10

    app = DeckApp(GivenDeck(Paged()))
    async with app.run_test(size=(100, 30)) as pilot:
        app.loader.position = position
        app.loader.open("a1")
        await eventually(lambda: _true(reads == 1), what="the first read")
        app.loader.open("a1")  # again: the first read is cancelled
        await eventually(lambda: _true(reads == 2), what="the second read")
        await pilot.pause()
        assert app.loader.loading  # not "loaded" by the cancelled read
        live = StoredEvent(id=7, agent_id="a1", type="assistant_text", ts=0, data={"text": "live"})
        app.loader.take(live)  # waits for the page
        released.set()
        await eventually(lambda: _true(not app.loader.loading), what="the page")
        view = app.query_one("#transcript", TranscriptView)
        assert "hello from the page" in view.text and "live" in view.text
        assert view.text.index("hello from the page") < view.text.index("live")
