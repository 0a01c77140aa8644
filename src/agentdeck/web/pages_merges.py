"""The merge queue in the dashboard: the agent page's Merge button, and the queue
view (what waits, what is being merged, how the last ones ended), kept current
while anything is pending."""

from __future__ import annotations

from typing import cast

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from agentdeck.core.agent import Agent
from agentdeck.core.merge_queue import PENDING, MergeEntry
from agentdeck.core.worktree import STRATEGIES, Strategy, Worktree
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError
from agentdeck.web.auth import actor_label
from agentdeck.web.pages_actions import form_of, redirect
from agentdeck.web.pages_base import agent_names, deck_of, form_error, render, render_text

router = APIRouter(include_in_schema=False)

SHOWN = 50  # entries on the page: every pending one is among them first


async def _queue_html(deck: Deck) -> str:
    pending = await deck.merges(states=PENDING, oldest_first=True, limit=1000)
    ended = [e for e in await deck.merges(limit=SHOWN) if e.state not in PENDING]
    places: dict[str, int] = {}
    rows: list[tuple[str, MergeEntry]] = []
    for e in pending:
        places[e.repo] = places.get(e.repo, 0) + 1
        rows.append((f"#{places[e.repo]}", e))
    names = await agent_names(deck, {e.agent_id for e in [*pending, *ended]})
    return render_text("_merges.html", pending=rows, ended=ended, names=names)


@router.get("/merges", response_class=HTMLResponse)
async def merges_page(request: Request) -> HTMLResponse:
    return render("merges.html", nav="merges", queue=await _queue_html(deck_of(request)))


@router.get("/ui/merges", response_class=HTMLResponse)
async def merges_partial(request: Request) -> HTMLResponse:
    return HTMLResponse(await _queue_html(deck_of(request)))


@router.post("/ui/agents/{agent_id}/merge")
async def merge_agent(request: Request, agent_id: str) -> Response:
    """Queue the agent's branch (no waiting: the queue view follows it)."""
    deck = deck_of(request)
    form = await form_of(request)
    try:
        await deck.merge(
            agent_id,
            into=form.get("into", "").strip() or None,
            strategy=cast(Strategy, form.get("strategy", "merge")),  # the queue checks it
            test=form.get("test", "").strip() or None,
            by=actor_label(request, "web"),
            wait=False,
        )
    except AgentdeckError as exc:
        return form_error(request, exc.message, htmx_status=200)
    return redirect(request, "/merges")


@router.post("/ui/merges/{ref}/cancel")
async def cancel_merge(request: Request, ref: str) -> Response:
    try:
        await deck_of(request).cancel_merge(ref, by=actor_label(request, "web"))
    except AgentdeckError as exc:
        return form_error(request, exc.message, htmx_status=200)
    return redirect(request, "/merges")


async def merge_panel_html(deck: Deck, agent: Agent) -> str:
    """The agent page's Merge form and its last merges, or nothing without a worktree."""
    worktree = Worktree.from_extra(agent.extra)
    if worktree is None:
        return ""
    recent = await deck.merges(agent_id=agent.id, limit=3)
    return render_text(
        "_agent_merge.html", agent=agent, worktree=worktree, recent=recent, strategies=STRATEGIES
    )
