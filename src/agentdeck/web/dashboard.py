"""The dashboard pages: the board, an agent's transcript, the activity feed.

Server-rendered (Jinja2) and made live by htmx and its SSE extension
(``pages_stream``); the buttons and forms post to ``pages_actions``. Every
query is bounded: a page of agents, the tail of a log, a page of older events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.approvals import ApprovalState
from agentdeck.core.asks import Ask, AskState
from agentdeck.core.events import EventType
from agentdeck.daemon.deck import Deck, StoreStats
from agentdeck.errors import NotFound
from agentdeck.web import (
    pages_actions,
    pages_approvals,
    pages_asks,
    pages_checkpoints,
    pages_diff,
    pages_health,
    pages_memories,
    pages_memory,
    pages_merges,
    pages_policy,
    pages_stream,
    pages_usage,
)
from agentdeck.web.pages_base import agent_names, agent_partial, deck_of, render, render_text
from agentdeck.web.pages_render import STATIC, parse_states, transcript_items
from agentdeck.web.pages_tree import branches, speaker_of

router = APIRouter(include_in_schema=False)
router.include_router(pages_merges.router)  # before /ui/agents/{id}/{action}
router.include_router(pages_checkpoints.router)  # so is /ui/agents/{id}/rewind
router.include_router(pages_actions.router)
router.include_router(pages_stream.router)
router.include_router(pages_approvals.router)
router.include_router(pages_asks.router)
router.include_router(pages_memory.router)
router.include_router(pages_memories.router)
router.include_router(pages_diff.router)
router.include_router(pages_health.router)
router.include_router(pages_usage.router)
router.include_router(pages_policy.router)

PER_PAGE = 50
MAX_PER_PAGE = 200
TRANSCRIPT_PAGE = 200
ACTIVITY_PAGE = 30
ACTIVITY_PAGE_FULL = 100
_STATIC_FILES = {p.name for p in STATIC.iterdir() if p.suffix in {".js", ".css"}}
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}


@dataclass(frozen=True)
class BoardQuery:
    page: int
    per_page: int
    state: str
    q: str

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def tree(self) -> bool:
        """Unfiltered, the board shows agents under the orchestrator that started them."""
        return not self.state and not self.q

    def link(self, **changes: Any) -> str:
        values = {"page": self.page, "state": self.state, "q": self.q, **changes}
        parts = [f"{k}={v}" for k, v in values.items() if v not in ("", None, 1)]
        if self.per_page != PER_PAGE:
            parts.append(f"per_page={self.per_page}")
        return "/?" + "&".join(parts) if parts else "/"


def matching_total(stats: StoreStats, states: list[AgentState] | None) -> int:
    wanted = None if states is None else {str(s) for s in states}
    return sum(n for s, n in stats.agents_by_state.items() if wanted is None or s in wanted)


async def board_page(deck: Deck, query: BoardQuery) -> dict[str, Any]:
    """A page of agents: with no filter, a page of agents without a parent, each
    with the agents below it (a tree); filtered, a flat page of the matches."""
    states = parse_states(query.state)
    tree = query.tree
    rows: list[Agent] = []
    if states != []:
        rows = await deck.list_agents(
            states=states,
            text=query.q or None,
            limit=query.per_page + 1,
            offset=query.offset,
            roots=tree,
        )
    stats = await deck.stats()
    total = None if query.q else matching_total(stats, states)
    shown = rows[: query.per_page]
    return {
        "agents": shown,
        "branches": await branches(deck, shown) if tree else None,
        "has_next": len(rows) > query.per_page,
        "total": total,
        "pages_of": stats.roots if tree else total,
        "stats": stats,
        "query": query,
    }


@router.get("/", response_class=HTMLResponse)
async def board(
    request: Request,
    page: int = Query(1, ge=1),
    per_page: int = Query(PER_PAGE, ge=1, le=MAX_PER_PAGE),
    state: str = "",
    q: str = "",
) -> HTMLResponse:
    deck = deck_of(request)
    query = BoardQuery(page=page, per_page=per_page, state=state, q=q.strip())
    context = await board_page(deck, query)
    activity = await recent_activity(deck, ACTIVITY_PAGE)
    return render(
        "board.html",
        **context,
        activity=activity,
        states=list(AgentState),
        scenarios=deck.scenario_names(),
        templates=(await deck.templates()).templates,
        pending_count=await pages_approvals.pending_count(deck),
    )


async def recent_activity(deck: Deck, limit: int) -> list[dict[str, Any]]:
    """The newest events across agents (newest first), with their agents' names."""
    events = await deck.events_before(limit=limit)
    events = [e for e in events if e.type != EventType.COST_UPDATED]
    names = await agent_names(deck, {e.agent_id for e in events})
    return [{"event": e, "name": names.get(e.agent_id, e.agent_id)} for e in reversed(events)]


@router.get("/activity", response_class=HTMLResponse)
async def activity(request: Request) -> HTMLResponse:
    deck = deck_of(request)
    last_id = await deck.last_event_id()
    items = await recent_activity(deck, ACTIVITY_PAGE_FULL)
    return render(
        "activity.html",
        activity=items,
        last_id=last_id,
        pending_count=await pages_approvals.pending_count(deck),
    )


@router.get("/agents/{agent_id}", response_class=HTMLResponse)
async def agent_page(request: Request, agent_id: str, before: int | None = None) -> HTMLResponse:
    deck = deck_of(request)
    try:
        agent = await deck.get_agent(agent_id)
    except NotFound:
        return render("not_found.html", status_code=404, what=f"agent {agent_id}")
    events = await deck.events_before(agent_id=agent.id, before=before, limit=TRANSCRIPT_PAGE + 1)
    older = len(events) > TRANSCRIPT_PAGE
    events = events[-TRANSCRIPT_PAGE:]
    waiting = await deck.approvals(states=[ApprovalState.PENDING], agent_id=agent.id, limit=20)
    here = f"/agents/{agent.id}"
    return render(
        "agent.html",
        agent=agent,
        family=await family_html(deck, agent),
        diff=await pages_diff.diff_html(deck, agent),
        merge=await pages_merges.merge_panel_html(deck, agent),
        checkpoints=await pages_checkpoints.timeline_html(deck, agent),
        asks=await pages_asks.cards(deck, await agent_questions(deck, agent), here),
        approvals=[
            pages_approvals.card_html(a, agent.name, next_url=here) for a in reversed(waiting)
        ],
        pending_count=await pages_approvals.pending_count(deck),
        poll_approvals=True,  # this page's stream carries only this agent's events
        items=transcript_items(events),
        speaker=await speaker_of(deck, agent),
        first_id=events[0].id if events else None,
        older=older,
        live=before is None,
        after=events[-1].id if events else 0,
    )


async def family_html(deck: Deck, agent: Agent) -> str:
    """Who started the agent, and the agents it started (kept current by polling
    while any of them is live)."""
    parent = None
    if agent.parent_id:
        try:
            parent = await deck.get_agent(agent.parent_id)
        except NotFound:
            parent = None
    children = await deck.children(agent.id)
    below = await deck.descendants([agent.id]) if children else []
    # A queued agent is not live yet, but will be: its family is followed too.
    live = not agent.state.is_final or any(not c.state.is_final for c in children)
    return render_text(
        "_agent_family.html",
        agent=agent,
        parent=parent,
        children=children,
        tree_cost=agent.cost_usd + sum(a.cost_usd for a in below),
        poll=live,
    )


async def agent_questions(deck: Deck, agent: Agent) -> list[Ask]:
    """Open questions the agent asked, and those its workers put to it."""
    own = await deck.asks(states=[AskState.PENDING], agent_id=agent.id, limit=20)
    theirs = await deck.asks_to(agent.id, limit=50)
    return sorted({a.id: a for a in [*own, *theirs]}.values(), key=lambda a: a.created_at)


@router.get("/ui/agents/{agent_id}/family", response_class=HTMLResponse)
async def family(request: Request, agent_id: str) -> HTMLResponse:
    return await agent_partial(request, agent_id, family_html)


@router.get("/ui/agents/{agent_id}/older", response_class=HTMLResponse)
async def older_events(request: Request, agent_id: str, before: int) -> HTMLResponse:
    """A page of earlier events, swapped in where the "older" link was."""
    deck = deck_of(request)
    events = await deck.events_before(agent_id=agent_id, before=before, limit=TRANSCRIPT_PAGE + 1)
    older = len(events) > TRANSCRIPT_PAGE
    events = events[-TRANSCRIPT_PAGE:]
    try:
        speaker = await speaker_of(deck, await deck.get_agent(agent_id))
    except NotFound:
        speaker = "you"
    return render(
        "_older.html",
        agent_id=agent_id,
        speaker=speaker,
        items=transcript_items(events),
        first_id=events[0].id if events else None,
        older=older,
    )


@router.get("/ui/events/{event_id}/output", response_class=PlainTextResponse)
async def event_output(request: Request, event_id: int) -> PlainTextResponse:
    """The whole stored output of one tool result (as much as the event holds)."""
    found = await deck_of(request).events(after=event_id - 1, limit=1)
    if not found or found[0].id != event_id or found[0].type != EventType.TOOL_RETURNED:
        return PlainTextResponse("no such tool result", status_code=404)
    data = found[0].data
    note = ""
    if data.get("truncated"):
        note = (
            f"\n\n[cut at {len(data.get('output', ''))} characters of {data.get('size')} bytes; "
            f"the full output is stored at {data.get('payload_path')}]"
        )
    return PlainTextResponse(str(data.get("output", "")) + note)


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in _STATIC_FILES:
        return PlainTextResponse("not found", status_code=404)
    path = STATIC / name
    return FileResponse(
        path,
        media_type=_STATIC_TYPES[path.suffix],
        headers={"cache-control": "max-age=300"},
    )
