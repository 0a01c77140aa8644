"""The deck's keys are off while a dialog is open: keys typed into a dialog go to the
dialog, never to the deck behind it (no daemon needed: the board is filled as the
snapshots fill it)."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from agentdeck.tui.app import DeckApp
from agentdeck.tui.screens import Confirm, Prompt
from tests.tui.test_snapshots import Nowhere, fill

pytestmark = pytest.mark.anyio


class CountingApp(DeckApp):
    """The app, counting the API calls its keys start (none reach a daemon here)."""

    def __init__(self) -> None:
        super().__init__(Nowhere())
        self.calls: list[str] = []

    def _do(self, what: str, *args: object, **kw: object) -> None:
        self.calls.append(what)


async def test_q_and_k_inside_the_kill_confirmation_do_nothing() -> None:
    app = CountingApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await fill(pilot)
        await pilot.press("k")
        assert isinstance(app.screen, Confirm)
        await pilot.press("q", "k", "i", "r", "a", "s", "m", "slash")
        assert app.is_running and isinstance(app.screen, Confirm)
        assert len(app.screen_stack) == 2 and app.calls == [] and app.sort is None
        await pilot.press("n")  # the dialog's own keys still work
        assert app.screen is app.screen_stack[0] and app.calls == []
        # Back on the deck its keys are on again.
        await pilot.press("k", "y")
        assert app.calls == ["killed fixer"]
        await pilot.press("q")
        assert not app.is_running


async def test_keys_typed_into_a_prompt_are_text() -> None:
    app = CountingApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await fill(pilot)
        await pilot.press("d")
        assert isinstance(app.screen, Prompt)
        await pilot.press(*"quick kids", "enter")
        assert app.is_running and app.screen is app.screen_stack[0]
        assert app.calls == ["denied"]
        assert app.query_one("#message", Input).value == ""
