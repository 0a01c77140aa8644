"""The selected agent's transcript, read into the transcript pane.

Opening an agent reads the newest page of its log (``GET /api/events?before=``, up to
where the event stream is), so a long log opens as fast as a short one; scrolling to
the top reads the page before. Live events of the agent that arrive while a page is
read wait, and are added after it; an event already shown (by id) is not added again.
Every read runs in a worker on the app's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from textual.app import App

from agentdeck.errors import AgentdeckError
from agentdeck.tui.client import DeckClient
from agentdeck.tui.transcript import TranscriptView

TRANSCRIPT_PAGE = 200  # events read at a time: the newest page first, older on scroll-up


class TranscriptLoader:
    def __init__(
        self,
        app: App[None],
        client: DeckClient,
        view: Callable[[], TranscriptView],
        position: Callable[[], Awaitable[int]],
    ) -> None:
        """``view`` finds the pane; ``position`` is the last event id the app has from
        the stream (or the daemon's, before the stream is open)."""
        self.app, self.client, self.view, self.position = app, client, view, position
        self.agent_id: str | None = None
        self.loading = False  # the newest page is being read
        self.upto = 0  # the newest event id in the pane
        self._waiting: list[dict[str, Any]] = []  # live events while the page is read

    def open(self, agent_id: str) -> None:
        """Show an agent's transcript from its newest page (again, if it is shown)."""
        self.view().reset()
        self.agent_id, self.upto, self.loading, self._waiting = agent_id, 0, True, []
        self._spawn(partial(self._load, agent_id), group="transcript")

    def take(self, event: dict[str, Any]) -> None:
        """A live event of the agent shown."""
        if self.loading:
            self._waiting.append(event)
        else:
            self.write(event)

    def older(self, before: int) -> None:
        """Read the page before ``before`` (the pane scrolled to its top)."""
        if self.agent_id is not None:
            self._spawn(partial(self._load_older, self.agent_id, before), group="transcript-older")

    def write(self, event: dict[str, Any]) -> None:
        if not self.app.is_running:  # shutting down: the widgets are going
            return
        event_id = int(event.get("id") or 0)
        if event_id <= self.upto:
            return
        self.upto = event_id
        self.view().append([event])

    def _spawn(self, work: Callable[[], Awaitable[None]], *, group: str) -> None:
        self.app.run_worker(work, group=group, exclusive=True)

    async def _load(self, agent_id: str) -> None:
        view = self.view()
        events: list[dict[str, Any]] = []
        older: int | None = None
        try:
            # Up to where the stream is: what comes after arrives through it.
            before = await self.position() + 1
            page = await self.client.events(agent_id, before=before, limit=TRANSCRIPT_PAGE)
            events, older = page["events"], page.get("next_before")
        except AgentdeckError as exc:
            self.app.notify(f"could not read the transcript: {exc.message}", severity="error")
        # Not in a ``finally``: a read cancelled by a newer one (the same agent opened
        # again) leaves the pane loading, for the newer read to fill.
        if self.agent_id == agent_id and self.app.is_running:
            self.upto = max([self.upto, *(e["id"] for e in events)])
            view.append(events)
            view.older, view.fetching = older, False
            self.loading = False
            waiting, self._waiting = self._waiting, []
            for event in waiting:
                self.write(event)

    async def _load_older(self, agent_id: str, before: int) -> None:
        view = self.view()
        try:
            page = await self.client.events(agent_id, before=before, limit=TRANSCRIPT_PAGE)
        except AgentdeckError as exc:
            self.app.notify(f"could not read older events: {exc.message}", severity="error")
            view.fetching = False
            return
        if self.agent_id == agent_id and self.app.is_running:
            view.prepend(page["events"], page.get("next_before"))
            view.fetching = False
