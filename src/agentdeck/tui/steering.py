"""The deck's actions on the selected agent and on the inbox: the keys' work.

``SteeringActions`` is the base of ``app.DeckApp``: each action makes one call of the
deck (``core.deck.Deck``) in a worker and says in a notice how it went; a destructive
one (kill) asks first, a denial asks for its reason, an answer for its text. The keys
themselves are bound in ``DeckApp``, which also turns them off while a dialog is open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

from textual.app import App
from textual.widget import Widget

from agentdeck.core.approvals import Approval, GrantScope
from agentdeck.core.asks import Ask
from agentdeck.core.deck import Deck
from agentdeck.core.memory_proposals import MemoryProposal
from agentdeck.errors import AgentdeckError
from agentdeck.tui.board import Board, Row
from agentdeck.tui.link import DeckLink
from agentdeck.tui.screens import Confirm, Prompt
from agentdeck.tui.tables import InboxItem, InboxTable

W = TypeVar("W", bound=Widget)
T = TypeVar("T", Approval, Ask, MemoryProposal)
Op = Callable[[Deck], Awaitable[object]]  # one call of the deck


class SteeringActions(App[None]):
    link: DeckLink
    board: Board
    inbox: list[InboxItem]
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

    def _inbox_item(self, kind: type[T]) -> T | None:
        """The pending approval or ask to act on (``InboxTable.pick``), or a notice
        that there is none."""
        item = self._main("#inbox", InboxTable).pick(self.inbox, kind)
        if item is None:
            noun = {Approval: "approval", Ask: "ask"}.get(kind, "memory")
            self.notify(f"no pending {noun}", severity="warning")
        return item

    async def _load_inbox(self) -> None:
        """The inbox read again (``DeckApp``'s)."""

    def _decide_memory(self, what: str, op: Callable[[Deck], Awaitable[object]]) -> None:
        async def decided(deck: Deck) -> None:
            await op(deck)
            await self._load_inbox()  # no event says a memory was decided

        self._do(what, decided)

    def action_keep_memory(self) -> None:
        item = self._inbox_item(MemoryProposal)
        if item is not None:
            self._decide_memory("memory kept", lambda deck: deck.accept_memory(item.id))

    def action_drop_memory(self) -> None:
        item = self._inbox_item(MemoryProposal)
        if item is not None:
            self._decide_memory("memory dropped", lambda deck: deck.reject_memory(item.id))

    def _spawn(
        self, work: Callable[[], Coroutine[Any, Any, None]], *, group: str, **kw: Any
    ) -> None:
        """A worker on the app's loop (network calls are asynchronous: no thread)."""
        self.run_worker(work, group=group, **kw)  # type: ignore[arg-type]  # Textual's stub

    def _do(self, what: str, op: Op) -> None:
        """Run one call of the deck in a worker; say how it went."""
        self._spawn(partial(self._act, what, op), group="act")

    async def _act(self, what: str, op: Op) -> None:
        try:
            await op(await self.link.deck())
        except AgentdeckError as exc:
            self.notify(f"{what}: {exc.message}", severity="error")
        else:
            self.notify(what, timeout=3)

    def action_allow(self) -> None:
        item = self._inbox_item(Approval)
        if item is not None:
            self._do("allowed once", lambda deck: deck.answer(item.id, "allow"))

    def action_allow_always(self) -> None:
        item = self._inbox_item(Approval)
        if item is not None:
            remember = GrantScope.PERSISTENT
            self._do(
                "allowed, and remembered",
                lambda deck: deck.answer(item.id, "allow", remember=remember),
            )

    def action_deny(self) -> None:
        item = self._inbox_item(Approval)
        if item is None:
            return

        def denied(reason: str | None) -> None:
            if reason is not None:
                told = reason or None
                self._do("denied", lambda deck: deck.answer(item.id, "deny", message=told))

        self.push_screen(Prompt("Deny — the reason the agent is told (may be empty):",
                                allow_empty=True), denied)  # fmt: skip

    def action_answer(self) -> None:
        item = self._inbox_item(Ask)
        if item is None:
            return

        def answered(text: str | None) -> None:
            if text:
                self._do("answered", lambda deck: deck.answer_ask(item.id, text))

        self.push_screen(Prompt(f"Answer: {item.text}"), answered)

    def action_interrupt(self) -> None:
        if (row := self._selected_row()) is not None:
            self._do(f"interrupted {row.name}", lambda deck: deck.interrupt(row.id))

    def action_resume(self) -> None:
        if (row := self._selected_row()) is not None:
            self._do(f"resumed {row.name}", lambda deck: deck.resume(row.id))

    def action_fork(self) -> None:
        """A new agent from a copy of the selected one's session (it must have ended)."""
        if (row := self._selected_row()) is not None:
            self._do(f"forked {row.name}", lambda deck: deck.resume(row.id, fork=True))

    def action_deck_quit(self) -> None:
        self.exit()

    def action_kill(self) -> None:
        row = self._selected_row()
        if row is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._do(f"killed {row.name}", lambda deck: deck.kill(row.id))

        self.push_screen(Confirm(f"Kill {row.name} and every agent it started?"), confirmed)
