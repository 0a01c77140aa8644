"""The selected agent's transcript, read into the transcript pane.

Opening an agent reads the newest page of its log (the deck's ``events_before``, up
to where the event feed is), so a long log opens as fast as a short one; scrolling to
the top reads the page before. Live events of the agent that arrive while a page is
read wait, and are added after it; an event already shown (by id) is not added again.
Every read runs in a worker on the app's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from textual.app import App

from agentdeck.core.events import StoredEvent
from agentdeck.errors import AgentdeckError
from agentdeck.tui.link import DeckLink
from agentdeck.tui.transcript import TranscriptView

TRANSCRIPT_PAGE = 200  # events read at a time: the newest page first, older on scroll-up


class TranscriptLoader:
    def __init__(
        self,
        app: App[None],
        link: DeckLink,
        view: Callable[[], TranscriptView],
        position: Callable[[], Awaitable[int]],
    ) -> None:
        """``view`` finds the pane; ``position`` is the last event id the app has from
        the feed (or the daemon's, before the feed is open)."""
        self.app, self.link, self.view, self.position = app, link, view, position
        self.agent_id: str | None = None
        self.loading = False  # the newest page is being read
        self.upto = 0  # the newest event id in the pane
        self._waiting: list[StoredEvent] = []  # live events while the page is read

    def open(self, agent_id: str) -> None:
        """Show an agent's transcript from its newest page (again, if it is shown)."""
        self.view().reset()
        self.agent_id, self.upto, self.loading, self._waiting = agent_id, 0, True, []
        self._spawn(partial(self._load, agent_id), group="transcript")

    def take(self, event: StoredEvent) -> None:
        """A live event of the agent shown."""
        if self.loading:
            self._waiting.append(event)
        else:
            self.write(event)

    def older(self, before: int) -> None:
        """Read the page before ``before`` (the pane scrolled to its top)."""
        if self.agent_id is not None:
            self._spawn(partial(self._load_older, self.agent_id, before), group="transcript-older")

    def write(self, event: StoredEvent) -> None:
        if not self.app.is_running:  # shutting down: the widgets are going
            return
        if event.id <= self.upto:
            return
        self.upto = event.id
        self.view().append([event])

    def _spawn(self, work: Callable[[], Awaitable[None]], *, group: str) -> None:
        self.app.run_worker(work, group=group, exclusive=True)

    async def _page(self, agent_id: str, before: int) -> tuple[list[StoredEvent], int | None]:
        """The newest page of the agent's events before ``before``, and where the page
        before it ends (None: this one is the first)."""
        deck = await self.link.deck()
        # One more than a page says whether anything older is left.
        read = await deck.events_before(agent_id=agent_id, before=before, limit=TRANSCRIPT_PAGE + 1)
        events = read[-TRANSCRIPT_PAGE:]
        return events, events[0].id if len(read) > TRANSCRIPT_PAGE else None

    async def _load(self, agent_id: str) -> None:
        view = self.view()
        events: list[StoredEvent] = []
        older: int | None = None
        try:
            # Up to where the feed is: what comes after arrives through it.
            events, older = await self._page(agent_id, await self.position() + 1)
        except AgentdeckError as exc:
            self.app.notify(f"could not read the transcript: {exc.message}", severity="error")
        # Not in a ``finally``: a read cancelled by a newer one (the same agent opened
        # again) leaves the pane loading, for the newer read to fill.
        if self.agent_id == agent_id and self.app.is_running:
            self.upto = max([self.upto, *(e.id for e in events)])
            view.append(events)
            view.older, view.fetching = older, False
            self.loading = False
            waiting, self._waiting = self._waiting, []
            for event in waiting:
                self.write(event)

    async def _load_older(self, agent_id: str, before: int) -> None:
        view = self.view()
        try:
            events, older = await self._page(agent_id, before)
        except AgentdeckError as exc:
            self.app.notify(f"could not read older events: {exc.message}", severity="error")
            view.fetching = False
            return
        if self.agent_id == agent_id and self.app.is_running:
            view.prepend(events, older)
            view.fetching = False
