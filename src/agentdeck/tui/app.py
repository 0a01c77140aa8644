"""The TUI: agent table, transcript, inbox, follow-up input, steering keys (the two
tables are drawn by ``tables``).

The daemon is reached through the Deck interface (``core.deck.Deck``: the
``RemoteDeck`` that ``link.DeckLink`` finds) and answers with the core's records. Its
calls run in Textual workers on the app's loop (they are asynchronous), so a slow or
dead daemon never freezes the screen. The deck's live events (``feed.EventFeed``, a
loop over ``Deck.follow``) move the board along; a changed row is redrawn as soon as
its event is in, and a burst of events costs one redraw per ``FLUSH_GAP``
(``ORDER_GAP`` when the order must be computed again).
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import ClassVar, TypeVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Footer, Input, Static

from agentdeck.core.approvals import ApprovalState
from agentdeck.core.asks import AskState
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.errors import AgentdeckError
from agentdeck.tui.agent_table import AgentTable
from agentdeck.tui.board import SORTS, Board, SortKey
from agentdeck.tui.feed import EventFeed, FeedState
from agentdeck.tui.link import DeckLink, Locator
from agentdeck.tui.loading import TranscriptLoader
from agentdeck.tui.palette import DeckCommands
from agentdeck.tui.render import alert_text, status_line
from agentdeck.tui.steering import SteeringActions
from agentdeck.tui.tables import InboxItem, InboxTable, box_of
from agentdeck.tui.transcript import TranscriptView

logger = logging.getLogger(__name__)
W = TypeVar("W", bound=Widget)

FLUSH_SECONDS = 0.1  # the slow tick: stale rows refetched, filter and sort redrawn
FLUSH_GAP = 0.002  # a changed row is redrawn at once, but at most this often (batching)
ORDER_GAP = 0.02  # ... and at most this often when the order must be computed again
AGE_SECONDS = 5.0  # how often the age column moves on
TREE_LIMIT = 10_000  # the API's largest page: the newest 10,000 root agents and their trees
MEMORY = "memory_proposed"  # the notice an agent's remember call leaves
_INBOX_EVENTS = frozenset(
    {"permission_requested", "permission_resolved", "question_asked", "question_answered"}
)


class DeckApp(SteeringActions):
    TITLE = "agentdeck"
    COMMANDS = App.COMMANDS | {DeckCommands}  # ctrl+p: the deck's commands (palette.py)
    CSS = """
    #status { height: 1; background: $panel; padding: 0 1; }
    #status.reconnecting { background: $warning; color: $text; }
    #agents { height: 1fr; min-height: 5; }
    #filter { display: none; }
    #filter.shown { display: block; }
    #transcript { height: 1fr; min-height: 4; border-top: solid $primary; }
    #inbox-title { height: 1; background: $panel; padding: 0 1; }
    #inbox { height: auto; max-height: 6; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "filter"),
        Binding("s", "sort", "sort"),
        Binding("m", "message", "message"),
        Binding("t", "transcript", "transcript", show=False),  # said on the pane's border
        # The deciding keys are on the inbox's title line, beside what they decide.
        Binding("a", "allow", "allow", show=False),
        Binding("A", "allow_always", "always", show=False),
        Binding("d", "deny", "deny", show=False),
        Binding("n", "answer", "answer", show=False),
        Binding("y", "keep_memory", "keep", show=False),
        Binding("x", "drop_memory", "drop", show=False),
        Binding("i", "interrupt", "interrupt"),
        Binding("k", "kill", "kill"),
        Binding("r", "resume", "resume"),
        Binding("f", "fork", "fork"),
        Binding("q", "deck_quit", "quit"),  # ctrl+q (Textual's) quits from anywhere
        Binding("escape", "leave_input", "Back", show=False),
    ]
    # The deck's own keys act on the main screen only: under a dialog (the kill
    # confirmation, a prompt, the command palette) they are off, so ``q`` or ``k``
    # typed there never quits or kills behind the dialog's back.
    DECK_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        binding.action for binding in BINDINGS if isinstance(binding, Binding)
    )

    def __init__(self, daemon: Locator | DeckLink) -> None:
        """``daemon``: where the daemon is (its deck is found there), or a link."""
        super().__init__()
        self.link = daemon if isinstance(daemon, DeckLink) else DeckLink(daemon)
        self.board = Board()
        self.feed: EventFeed | None = None
        self.feed_state = FeedState.CONNECTING
        self.feed_problem: str | None = None
        self.filter_text = ""
        self.sort: SortKey = None
        self.selected: str | None = None
        self.inbox: list[InboxItem] = []
        self._dirty: set[str] = set()
        self._flush_due = False
        self._last_flush = 0.0
        self._redraw = False
        self._status_text = ""
        self._synced = False  # the board was read since the stream's position was taken
        self.loader = TranscriptLoader(
            self, self.link, lambda: self._main("#transcript", TranscriptView), self._position
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """False (off, and out of the footer) for a deck key while a dialog is open."""
        return action not in self.DECK_ACTIONS or len(self.screen_stack) == 1

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="status")
        yield AgentTable(id="agents")
        yield Input(placeholder="filter agents (Enter keeps it, Esc clears)", id="filter")
        transcript = TranscriptView(id="transcript")
        transcript.border_title = "transcript  [b]t[/] go in  [b]⏎[/] open a call  [b]\\[ ][/] page"
        yield transcript
        yield Static("inbox: nothing pending", id="inbox-title")
        yield InboxTable(id="inbox")
        yield Input(placeholder="m: message the selected agent", id="message", compact=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._main("#agents", AgentTable).focus()
        self.set_interval(FLUSH_SECONDS, self._flush_board)
        self.set_interval(AGE_SECONDS, self._tick_ages)
        self._spawn(self._follow, name="event-feed", group="feed")

    async def on_unmount(self) -> None:
        await self.link.aclose()

    # -- the event feed ---------------------------------------------------------------

    async def _follow(self) -> None:
        """Start at the log's end, then follow the stream for ever (it reconnects)."""
        position: int | None = None
        while position is None:
            try:
                position = await (await self.link.deck()).last_event_id()
            except AgentdeckError as exc:  # DaemonUnavailable among them
                await self._take_feed_state(FeedState.RECONNECTING, exc.message)
                await self._pause(1.0)
        # The agents and the inbox are read now, while the stream connects: read after
        # the position was taken, they miss nothing the stream will not bring.
        self._synced = True
        self._spawn(self._resync, group="resync", exclusive=True)
        self.feed = EventFeed(
            self.link,
            after=position,
            on_event=self._take_event,
            on_state=self._take_feed_state,
            on_partial=self._take_partial,
        )
        await self.feed.run()

    async def _pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _take_feed_state(self, state: FeedState, problem: str | None) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        was = self.feed_state
        self.feed_state, self.feed_problem = state, problem
        if state is FeedState.LIVE and was is not FeedState.LIVE and not self._synced:
            # Connected again: what changed while we were away is in the events we
            # resume with, but the rows and the inbox are read afresh to be sure.
            self._spawn(self._resync, group="resync", exclusive=True)
        self._synced = False  # (the first connection's were read as it connected)
        self._show_status()

    async def _take_event(self, event: StoredEvent) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        kind = event.type
        changed = self.board.apply(event)
        if changed is not None:
            self._dirty.add(changed)
            if kind == "agent_spawned":
                self._redraw = True
            self._schedule_flush()
        if kind in _INBOX_EVENTS or (kind == "notice" and event.data.get("kind") == MEMORY):
            self._spawn(self._load_inbox, group="inbox", exclusive=True)
        if kind in ("permission_requested", "question_asked"):
            self.bell()  # at once; the notice may first need the agent's name
            self._spawn(partial(self._alert, event), group="alert")
        if event.agent_id == self.selected:
            self.loader.take(event)

    def _take_partial(self, edit: PartialText) -> None:
        """The text being written, in the pane of the agent shown."""
        if self.is_running and edit.agent_id == self.selected and not self.loader.loading:
            self.loader.view().write_partial(edit)

    async def _alert(self, event: StoredEvent) -> None:
        """A notification, wherever the user is in the app."""
        agent_id = event.agent_id
        if agent_id not in self.board.rows:  # e.g. the board is still being read
            try:
                self.board.upsert([await (await self.link.deck()).get_agent(agent_id)])
            except AgentdeckError as exc:
                logger.info("could not name agent %s: %s", agent_id, exc)
        row = self.board.rows.get(agent_id)
        who = row.name if row else agent_id
        what = alert_text(event, who)
        self.notify(what, title="needs you (a/A/d, n)", severity="warning", timeout=8)

    async def _resync(self) -> None:
        try:
            agents = await (await self.link.deck()).tree(limit=TREE_LIMIT)
        except AgentdeckError as exc:
            logger.info("resync failed: %s", exc)
            return
        self.board.load(agents)
        self._redraw = True
        self._schedule_flush()  # drawn now, not at the next tick
        await self._load_inbox()
        if self.selected is None and self.board.rows:
            first = next(self.board.ordered(self.filter_text, self.sort), None)
            if first is not None:
                self._select(first[0].id)

    async def _load_inbox(self) -> None:
        try:
            deck = await self.link.deck()
            approvals = await deck.approvals(states=[ApprovalState.PENDING])
            asks = await deck.asks(states=[AskState.PENDING])
            memories = await deck.memory_proposals("pending")
        except AgentdeckError as exc:
            logger.info("inbox refresh failed: %s", exc)
            return
        self.inbox = [*approvals, *asks, *memories]
        self._draw_inbox()
        self._show_status()

    async def _refetch(self, ids: list[str]) -> None:
        try:
            deck = await self.link.deck()
            if len(ids) > 20:
                self.board.upsert(await deck.tree(limit=TREE_LIMIT))
            else:
                for agent_id in ids:
                    self.board.upsert([await deck.get_agent(agent_id)])
        except AgentdeckError as exc:
            logger.info("agent refresh failed: %s", exc)
            return
        self._dirty.update(ids)

    # -- drawing ----------------------------------------------------------------------

    def _show_status(self) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        status = self._main("#status", Static)
        state = self.feed_state
        text = status_line(
            str(state), self.link.where, agents=len(self.board.rows),
            pending=len(self.inbox), sort=self.sort, filter_text=self.filter_text,
            problem=self.feed_problem if state is FeedState.RECONNECTING else None,
        )  # fmt: skip
        if text != self._status_text:  # an update lays the screen out again: only if new
            self._status_text = text
            status.update(text)
        status.set_class(state is FeedState.RECONNECTING, "reconnecting")

    def _schedule_flush(self) -> None:
        """Redraw the changed rows soon: on the loop's next turn when the last redraw
        was a while ago (one event, drawn at once), else when ``FLUSH_GAP`` has passed
        (a burst: every row it changed, in one redraw). A redraw costs the changed rows
        only (those out of view: nothing on screen), unless the order must be computed
        again (a filter, an order by state or cost): then at most one per ``ORDER_GAP``."""
        if self._flush_due:
            return
        self._flush_due = True
        moves = bool(self.filter_text) or self.sort in ("state", "cost")  # a sort of 1,000s
        wait = self._last_flush + (ORDER_GAP if moves else FLUSH_GAP) - time.monotonic()
        if wait <= 0:
            self.call_later(self._flush_soon)
        else:
            self.set_timer(wait, self._flush_soon)

    def _flush_soon(self) -> None:
        self._flush_due = False
        self._flush_board()

    def _flush_board(self) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        stale = sorted(self.board.stale)
        if stale:
            self.board.stale.clear()
            self._spawn(partial(self._refetch, stale), group="refetch")
        if not self._redraw and not self._dirty:
            return
        self._last_flush = time.monotonic()
        # The order changes with a new row (a redraw), or with a changed row under a
        # filter or an order by state or cost; else the changed rows are drawn in place.
        moves = self._redraw or bool(self.filter_text) or self.sort in ("state", "cost")
        order = list(self.board.ordered(self.filter_text, self.sort)) if moves else None
        self._main("#agents", AgentTable).draw(
            self.board, order, self._dirty, whole=self._redraw, selected=self.selected
        )
        self._dirty.clear()
        self._redraw = False
        self._show_status()

    def _tick_ages(self) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        self._main("#agents", AgentTable).tick_ages(self.board)

    def _draw_inbox(self) -> None:
        if not self.is_running:  # shutting down: the widgets are going
            return
        self._main("#inbox", InboxTable).draw(self.inbox, self.board)
        title = self._main("#inbox-title", Static)
        if self.inbox:
            memories = any(box_of(item) == "memory" for item in self.inbox)
            title.update(
                f"[b]inbox: {len(self.inbox)} pending[/]  "
                "[b]a[/] allow  [b]A[/] always  [b]d[/] deny  [b]n[/] answer"
                + ("  [b]y[/] keep memory  [b]x[/] drop memory" if memories else "")
            )
        else:
            title.update("inbox: nothing pending")

    # -- the transcript ---------------------------------------------------------------

    @on(AgentTable.Highlighted, "#agents")
    def _highlighted(self, event: AgentTable.Highlighted) -> None:
        if event.agent_id != self.selected:
            self._select(event.agent_id)

    def _select(self, agent_id: str) -> None:
        self.selected = agent_id
        row = self.board.rows.get(agent_id)
        message = self._main("#message", Input)
        message.placeholder = f"m: message {row.name if row else agent_id}"
        self.loader.open(agent_id)

    async def _position(self) -> int:
        """The last event id the app has (the feed's), or the daemon's before it."""
        if self.feed is not None:
            return self.feed.position
        return await (await self.link.deck()).last_event_id()

    @on(TranscriptView.NeedOlder)
    def _need_older(self, message: TranscriptView.NeedOlder) -> None:
        self.loader.older(message.before)

    @on(TranscriptView.NeedTail)
    def _need_tail(self) -> None:
        if self.selected is not None:
            self.loader.open(self.selected)

    # -- actions ----------------------------------------------------------------------

    def action_sort(self) -> None:
        """Step through the orders: age (the default), name, state, cost."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._redraw = True
        self._schedule_flush()
        self._show_status()

    def action_filter(self) -> None:
        box = self._main("#filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._redraw = True
        self._schedule_flush()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self._main("#agents", AgentTable).focus()

    def action_leave_input(self) -> None:
        box = self._main("#filter", Input)
        if box.has_focus:
            box.value = ""
            box.remove_class("shown")
        self._main("#agents", AgentTable).focus()

    def action_transcript(self) -> None:
        """Into the transcript: up/down pick an entry, Enter opens a tool call."""
        self._main("#transcript", TranscriptView).focus()

    def action_message(self) -> None:
        if self._selected_row() is not None:
            self._main("#message", Input).focus()

    @on(Input.Submitted, "#message")
    def _message_submitted(self, event: Input.Submitted) -> None:
        row = self._selected_row()
        text = event.value.strip()
        if row is None or not text:
            return
        event.input.value = ""
        self._main("#agents", AgentTable).focus()
        self._do(f"sent to {row.name}", lambda deck: deck.send(row.id, text))
