"""The deck's actions on the selected agent and on the inbox: the keys' work.

``SteeringActions`` is the base of ``app.DeckApp``: each action makes one API call in
a worker and says in a notice how it went; a destructive one (kill) asks first, a
denial asks for its reason, an answer for its text. The keys themselves are bound in
``DeckApp``, which also turns them off while a dialog is open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

from textual.app import App
from textual.widget import Widget

from agentdeck.errors import AgentdeckError
from agentdeck.tui.board import Board, Row
from agentdeck.tui.client import DeckClient
from agentdeck.tui.screens import Confirm, Prompt
from agentdeck.tui.tables import InboxTable

W = TypeVar("W", bound=Widget)


class SteeringActions(App[None]):
    client: DeckClient
    board: Board
    inbox: list[dict[str, Any]]
    selected: str | None

    def _main(self, selector: str, kind: type[W]) -> W:
        """A widget of the main screen, even while a modal screen is on top of it
        (``App.query_one`` looks at the screen on top)."""
        return self.screen_stack[0].query_one(selector, kind)

    def _selected_row(self) -> Row | None:
        row = self.board.rows.get(self.selected or "")
        if row is None:
            self.notify("no agent selected", severity="warning")
        return row

    def _inbox_item(self, kind: str | None = None) -> dict[str, Any] | None:
        item = self._main("#inbox", InboxTable).pick(self.inbox, kind)
        if item is None and kind is not None and not any(i["box"] == kind for i in self.inbox):
            self.notify(f"no pending {kind}", severity="warning")
        return item

    def _spawn(
        self, work: Callable[[], Coroutine[Any, Any, None]], *, group: str, **kw: Any
    ) -> None:
        """A worker on the app's loop (network calls are asynchronous: no thread)."""
        self.run_worker(work, group=group, **kw)  # type: ignore[arg-type]  # Textual's stub

    def _do(self, what: str, call: Callable[..., Awaitable[object]], *args: Any, **kw: Any) -> None:
        """Run one API call in a worker; say how it went."""
        self._spawn(partial(self._act, what, partial(call, *args, **kw)), group="act")

    async def _act(self, what: str, call: Callable[[], Awaitable[object]]) -> None:
        try:
            await call()
        except AgentdeckError as exc:
            self.notify(f"{what}: {exc.message}", severity="error")
        else:
            self.notify(what, timeout=3)

    def action_allow(self) -> None:
        item = self._inbox_item("approval")
        if item is not None:
            self._do("allowed once", self.client.answer_approval, item["id"], "allow")

    def action_allow_always(self) -> None:
        item = self._inbox_item("approval")
        if item is not None:
            self._do(
                "allowed, and remembered",
                self.client.answer_approval, item["id"], "allow", always=True,
            )  # fmt: skip

    def action_deny(self) -> None:
        item = self._inbox_item("approval")
        if item is None:
            return

        def denied(reason: str | None) -> None:
            if reason is not None:
                self._do("denied", self.client.answer_approval, item["id"], "deny", message=reason)

        self.push_screen(Prompt("Deny — the reason the agent is told (may be empty):",
                                allow_empty=True), denied)  # fmt: skip

    def action_answer(self) -> None:
        item = self._inbox_item("ask")
        if item is None:
            return

        def answered(text: str | None) -> None:
            if text:
                self._do("answered", self.client.answer_ask, item["id"], text)

        self.push_screen(Prompt(f"Answer: {item.get('text', '')}"), answered)

    def action_interrupt(self) -> None:
        if (row := self._selected_row()) is not None:
            self._do(f"interrupted {row.name}", self.client.interrupt, row.id)

    def action_resume(self) -> None:
        if (row := self._selected_row()) is not None:
            self._do(f"resumed {row.name}", self.client.resume, row.id)

    def action_fork(self) -> None:
        """A new agent from a copy of the selected one's session (it must have ended)."""
        if (row := self._selected_row()) is not None:
            self._do(f"forked {row.name}", self.client.resume, row.id, fork=True)

    def action_deck_quit(self) -> None:
        self.exit()

    def action_kill(self) -> None:
        row = self._selected_row()
        if row is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._do(f"killed {row.name}", self.client.kill, row.id)

        self.push_screen(Confirm(f"Kill {row.name} and every agent it started?"), confirmed)
