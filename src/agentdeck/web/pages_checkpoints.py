"""The agent page's checkpoint timeline, and rewinding from it: a Rewind button
shows first what would change (a dry run, its patch highlighted), and only its
confirmation rewinds."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from agentdeck.core.agent import Agent
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError, NotFound
from agentdeck.web.auth import actor_label
from agentdeck.web.pages_actions import form_of, redirect
from agentdeck.web.pages_base import (
    agent_partial,
    deck_of,
    form_error,
    render,
    render_text,
)
from agentdeck.web.pages_diff import highlighted_in_thread

router = APIRouter(include_in_schema=False)

SHOWN = 200  # the newest checkpoints on the page; the CLI and the API list them all


async def timeline_html(deck: Deck, agent: Agent) -> str:
    """The panel (newest first), or nothing for an agent that has none."""
    found = await deck.checkpoints(agent.id)
    if not found:
        return ""
    return render_text(
        "_agent_checkpoints.html", agent=agent, checkpoints=found[::-1][:SHOWN],
        total=len(found), poll=agent.state.is_live, busy=agent.state.is_busy,
    )  # fmt: skip


@router.get("/ui/agents/{agent_id}/checkpoints", response_class=HTMLResponse)
async def timeline_panel(request: Request, agent_id: str) -> HTMLResponse:
    return await agent_partial(request, agent_id, timeline_html)


@router.get("/agents/{agent_id}/rewind", response_class=HTMLResponse)
async def rewind_preview(request: Request, agent_id: str, to: int) -> HTMLResponse:
    """What rewinding to ``to`` would change, and the button that does it."""
    deck = deck_of(request)
    try:
        agent = await deck.get_agent(agent_id)
        plan = await deck.rewind(agent.id, to=to, dry_run=True, by=actor_label(request, "web"))
    except NotFound as exc:
        return render("not_found.html", status_code=404, what=exc.message)
    except AgentdeckError as exc:
        return render("form_error.html", status_code=409, message=exc.message)
    patch, cut = await highlighted_in_thread(plan.patch)
    return render("rewind.html", agent=agent, plan=plan, patch=patch, cut=cut)


@router.post("/ui/agents/{agent_id}/rewind")
async def rewind_agent(request: Request, agent_id: str) -> Response:
    deck = deck_of(request)
    form = await form_of(request)
    try:
        to = int(form.get("to", ""))
    except ValueError:
        return form_error(request, "say which checkpoint to rewind to", htmx_status=200)
    try:
        agent = await deck.get_agent(agent_id)
        await deck.rewind(agent.id, to=to, by=actor_label(request, "web"))
    except AgentdeckError as exc:
        return form_error(request, exc.message, htmx_status=200)
    return redirect(request, f"/agents/{agent.id}#agent-checkpoints")
