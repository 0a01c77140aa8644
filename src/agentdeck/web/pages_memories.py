"""The Memories inbox on the dashboard (``/memories``): what agents proposed with
the deck's ``remember`` tool, with Accept, Reject and an edit box.

A memory's text is the model's: data for the reviewer, never an instruction. It is
rendered escaped (Jinja's autoescape) in a ``<pre>``, with who proposed it and
where. The buttons are plain form posts, guarded like every page action
(``SameSite=Strict`` session cookie, the middleware's ``Origin`` check); a viewer
gets none.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentdeck.core.memory_proposals import KINDS, LIST_MAX, ProposalState
from agentdeck.core.summary import age
from agentdeck.errors import AgentdeckError
from agentdeck.web import pages_approvals
from agentdeck.web.auth import actor_label
from agentdeck.web.pages_actions import form_of
from agentdeck.web.pages_base import deck_of, form_error, render

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

STATES = ("pending", "accepted", "rejected")
SHOWN = 100
ACTIONS = ("accept", "reject", "edit")


@router.get("/memories", response_class=HTMLResponse)
async def memories_page(request: Request, state: str = "pending", done: str = "") -> HTMLResponse:
    deck = deck_of(request)
    state = state if state in STATES else "pending"
    found = await deck.memory_proposals(state, limit=min(SHOWN, LIST_MAX))
    now = time.time()
    context: dict[str, Any] = {
        "memories": found,
        "state": state,
        "states": STATES,
        "kinds": KINDS,
        "done": done if done in ("accepted", "rejected", "edited") else "",
        "ago": lambda ts: age(now - ts),
        "pending": ProposalState.PENDING,
    }
    return render(
        "memories.html", **context, pending_count=await pages_approvals.pending_count(deck)
    )


@router.post("/ui/memories/{memory_id}/{action}")
async def act(request: Request, memory_id: str, action: str) -> Response:
    if action not in ACTIONS:
        return form_error(request, f"no such action: {action[:40]!r}", 404)
    form = await form_of(request)
    back = form.get("state", "pending")
    back = back if back in STATES else "pending"
    deck = deck_of(request)
    by = actor_label(request, "web")
    try:
        if action == "accept":
            await deck.accept_memory(memory_id, by=by)
        elif action == "reject":
            await deck.reject_memory(memory_id, by=by)
        else:
            await deck.edit_memory(memory_id, text=form.get("text"), kind=form.get("kind") or None)
    except AgentdeckError as exc:
        logger.info("dashboard %s of memory %s refused: %s", action, memory_id, exc.message)
        return form_error(request, f"could not {action} it: {exc.message}", exc.http_status)
    logger.info("memory %s: %s from the dashboard by %s", memory_id, action, by)
    said = {"accept": "accepted", "reject": "rejected", "edit": "edited"}[action]
    return RedirectResponse(f"/memories?state={back}&done={said}", status_code=303)
