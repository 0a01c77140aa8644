"""Live dashboard updates: server-sent events that carry HTML fragments.

htmx's SSE extension swaps them in as out-of-band swaps: a board row replaced
by id, a new row put at the top, a transcript entry appended, the totals or an
agent's header re-rendered. Each message carries the id of the last event it
covers, so a reconnecting browser (``Last-Event-ID``) resumes without loss.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.core.ports import SubscriptionDropped
from agentdeck.daemon.deck import Deck
from agentdeck.errors import NotFound
from agentdeck.web.pages_approvals import approval_fragments
from agentdeck.web.pages_asks import ask_fragments
from agentdeck.web.pages_base import agent_names, deck_of, render_text
from agentdeck.web.pages_render import (
    ACTIVITY_SKIP,
    BOARD_TYPES,
    TRANSCRIPT_TYPES,
    Item,
    parse_states,
    unique,
)
from agentdeck.web.pages_tree import MAX_BELOW, Branch, ancestors, row_info, speaker_of

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

HEARTBEAT_SECONDS = 5.0
TOTALS_EVERY_SECONDS = 1.0
# A board stream never replays more than this many events of backlog.
MAX_BACKLOG = 2000
ACTIVITY_PER_MESSAGE = 30
HEADER_TYPES = BOARD_TYPES | {EventType.USER_MESSAGE_SENT}


def sse_message(html: str, event_id: int | None, name: str = "update") -> str:
    lines = [f"id: {event_id}"] if event_id else []
    lines.append(f"event: {name}")
    lines += [f"data: {line}" for line in (html.splitlines() or [""])]
    return "\n".join(lines) + "\n\n"


def resume_point(request: Request, after: int) -> int:
    last = request.headers.get("last-event-id", "")
    return max(after, int(last)) if last.isdigit() else after


def event_stream(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(
        body,
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def oob(html: str, how: str) -> str:
    return f'<div hx-swap-oob="{how}">{html}</div>'


class BoardFeed:
    """Turns batches of events into the fragments one board page needs."""

    def __init__(
        self,
        deck: Deck,
        *,
        shown: set[str],
        states: list[AgentState] | None,
        insert_new: bool,
        board: bool,
        activity: bool,
        approvals: bool = False,
        asks: bool = False,
        tree: bool = False,
    ) -> None:
        self.deck = deck
        self.tree = tree
        self.shown = shown
        self.states = states
        self.insert_new = insert_new
        self.board = board
        self.activity = activity
        self.approvals = approvals
        self.asks = asks
        self.names: dict[str, str] = {}
        self.totals_dirty = False
        self.totals_at = 0.0

    async def fragments(self, batch: list[StoredEvent]) -> str:
        parts: list[str] = []
        if self.board:
            parts += await self._rows(batch)
            parts += await self._totals()
        if self.activity:
            parts += await self._activity(batch)
        inbox = "#pending-approvals" if self.approvals else None
        parts += await approval_fragments(self.deck, batch, list_id=inbox, next_url="/approvals")
        questions = "#pending-asks" if self.asks else None
        parts += await ask_fragments(self.deck, batch, list_id=questions, next_url="/asks")
        return "".join(parts)

    async def _rows(self, batch: list[StoredEvent]) -> list[str]:
        spawned = {e.agent_id for e in batch if e.type == EventType.AGENT_SPAWNED}
        parts: list[str] = []
        redraw: dict[str, Agent] = {}  # shown rows to re-render once each
        for agent_id in unique(e.agent_id for e in batch if e.type in BOARD_TYPES):
            self.totals_dirty = True
            if agent_id not in self.shown and not (self.insert_new and agent_id in spawned):
                continue
            try:
                agent = await self.deck.get_agent(agent_id)
            except NotFound:
                continue
            self.names[agent.id] = agent.name
            if agent_id in self.shown:
                redraw[agent.id] = agent
            elif self.tree and agent.parent_id:
                if agent.parent_id not in self.shown:
                    continue  # its parent is on another page
                self.shown.add(agent_id)
                parts.append(
                    oob(await self._branch(agent), f"beforeend:#children-{agent.parent_id}")
                )
            elif self.states is None or agent.state in self.states:
                self.shown.add(agent_id)
                html = (
                    await self._branch(agent)
                    if self.tree
                    else render_text("_row.html", agent=agent)
                )
                parts.append(oob(html, "afterbegin:#agent-rows"))
            if self.tree:  # a parent's row shows its children and its tree's cost
                for ancestor in await ancestors(self.deck, agent):
                    if ancestor.id in self.shown:
                        redraw.setdefault(ancestor.id, ancestor)
        for agent in redraw.values():
            info = await row_info(self.deck, agent) if self.tree else None
            parts.append(render_text("_row.html", agent=agent, info=info, oob=True))
        return parts

    async def _branch(self, agent: Agent) -> str:
        info = await row_info(self.deck, agent)
        return render_text("_branch.html", branch=Branch(agent, info))

    async def _totals(self) -> list[str]:
        now = time.monotonic()
        if not self.totals_dirty or now - self.totals_at < TOTALS_EVERY_SECONDS:
            return []
        self.totals_dirty = False
        self.totals_at = now
        return [render_text("_totals.html", stats=await self.deck.stats(), oob=True)]

    async def _activity(self, batch: list[StoredEvent]) -> list[str]:
        events = [e for e in batch if e.type not in ACTIVITY_SKIP][-ACTIVITY_PER_MESSAGE:]
        missing = {e.agent_id for e in events} - self.names.keys()
        if missing:
            self.names.update(await agent_names(self.deck, missing))
        return [
            oob(
                render_text("_activity_item.html", event=e, name=self.names[e.agent_id]),
                "afterbegin:#activity",
            )
            for e in events
        ]


@router.get("/ui/stream")
async def board_stream(
    request: Request,
    page: int = Query(1, ge=1),
    per_page: int = Query(50, ge=1, le=200),
    state: str = "",
    q: str = "",
    board: bool = True,
    activity: bool = True,
    approvals: bool = False,
    asks: bool = False,
    after: int = 0,
) -> StreamingResponse:
    deck = deck_of(request)
    states = parse_states(state)
    tree = board and not state and not q.strip()
    shown: set[str] = set()
    if board and states != []:
        rows = await deck.list_agents(
            states=states,
            text=q.strip() or None,
            limit=per_page,
            offset=(page - 1) * per_page,
            roots=tree,
        )
        if tree:
            rows += await deck.descendants([a.id for a in rows], limit=MAX_BELOW)
        shown = {a.id for a in rows}
    feed = BoardFeed(
        deck,
        shown=shown,
        states=states,
        insert_new=board and page == 1 and not q.strip() and states != [],
        board=board,
        activity=activity,
        approvals=approvals,
        asks=asks,
        tree=tree,
    )
    start = max(resume_point(request, after), deck.event_position - MAX_BACKLOG)
    return event_stream(_pump(deck, feed.fragments, after=start, heartbeat=heartbeat_of(request)))


@router.get("/ui/agents/{agent_id}/stream")
async def agent_stream(request: Request, agent_id: str, after: int = 0) -> StreamingResponse:
    deck = deck_of(request)
    speaker = "you"
    with contextlib.suppress(NotFound):
        speaker = await speaker_of(deck, await deck.get_agent(agent_id))

    async def fragments(batch: list[StoredEvent]) -> str:
        parts = []
        for event in batch:
            if event.type == EventType.TOOL_RETURNED:
                parts.append(render_text("_tool_output.html", result=event, oob=True))
            elif event.type in TRANSCRIPT_TYPES:
                item = render_text("_item.html", item=Item(event), speaker=speaker)
                parts.append(oob(item, "beforeend:#transcript"))
        if any(e.type in HEADER_TYPES for e in batch):
            agent = await deck.get_agent(agent_id)
            parts.append(render_text("_agent_header.html", agent=agent, oob=True))
        parts += await approval_fragments(
            deck, batch, list_id="#agent-approvals", next_url=f"/agents/{agent_id}"
        )
        parts += await ask_fragments(
            deck, batch, list_id="#agent-asks", next_url=f"/agents/{agent_id}"
        )
        return "".join(parts)

    return event_stream(
        _pump(
            deck,
            fragments,
            after=resume_point(request, after),
            agent_id=agent_id,
            heartbeat=heartbeat_of(request),
            partial=True,  # the text as it is written (dashboard.js shows it)
        )
    )


def heartbeat_of(request: Request) -> float:
    """Seconds of silence before a keep-alive (tests set a short one on the app)."""
    return float(getattr(request.app.state, "sse_heartbeat", HEARTBEAT_SECONDS))


async def _pump(
    deck: Deck,
    fragments: Callable[[list[StoredEvent]], Awaitable[str]],
    *,
    after: int,
    heartbeat: float,
    agent_id: str | None = None,
    partial: bool = False,
) -> AsyncIterator[str]:
    yield "retry: 2000\n: connected\n\n"
    follow = deck.follow_partial if partial else deck.follow
    try:
        async for items in follow(after=after, agent_id=agent_id, heartbeat=heartbeat):
            batch = [e for e in items if isinstance(e, StoredEvent)]
            for edit in items:
                if isinstance(edit, PartialText):  # no id: never resumed from
                    yield f"event: partial\ndata: {json.dumps(edit.to_dict())}\n\n"
            if items and not batch:
                continue
            html = await fragments(batch)
            if html:
                yield sse_message(html, batch[-1].id if batch else None)
            elif batch:
                yield f"id: {batch[-1].id}\n: nothing to show\n\n"
            else:
                yield ": ping\n\n"
    except SubscriptionDropped as exc:
        # The browser reconnects by itself, from the id it reached.
        logger.info("dashboard stream fell behind at event %d; the browser resumes", exc.position)
