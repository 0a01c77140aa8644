"""The approval inbox on the dashboard: the page, the answer buttons, the nav badge.

A pending request is one card (``_approval.html``): the agent, the tool call,
why the policy asked and by which rule, the time left before it is denied, and
Allow once / Allow always / Deny / Deny always with an optional message. The
buttons post here; the answer goes through ``Deck.answer(..., by="user:web:<user>")``.
The streams (``pages_stream``) use ``approval_fragments`` to add new cards, turn
answered ones over and refresh the pending count in the top bar, live.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError, InvalidState, NotFound
from agentdeck.web import inbox as shared
from agentdeck.web.auth import actor_label
from agentdeck.web.inbox import PENDING_LIMIT, count_label, safe_next
from agentdeck.web.pages_actions import form_of
from agentdeck.web.pages_base import agent_names, deck_of, form_error, render, render_text

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

ANSWERED = [
    ApprovalState.ALLOWED,
    ApprovalState.DENIED,
    ApprovalState.EXPIRED,
    ApprovalState.CANCELLED,
]
PERMISSION_TYPES = frozenset({EventType.PERMISSION_REQUESTED, EventType.PERMISSION_RESOLVED})
# The four buttons: (decision, remembered?)
ANSWERS = {
    "allow": ("allow", False),
    "allow_always": ("allow", True),
    "deny": ("deny", False),
    "deny_always": ("deny", True),
}


async def pending_count(deck: Deck) -> str:
    """The nav badge's text: how many requests wait for an answer ("" for none)."""
    found = await deck.approvals(states=[ApprovalState.PENDING], limit=PENDING_LIMIT)
    return count_label(len(found))


def count_html(count: str, *, oob: bool = False, poll: bool = False) -> str:
    return render_text("_approvals_count.html", pending_count=count, oob=oob, poll=poll)


def card_html(
    approval: Approval,
    name: str,
    *,
    next_url: str,
    oob: bool = False,
    once: bool = False,
    flash: dict[str, Any] | None = None,
) -> str:
    return render_text(
        "_approval.html",
        a=approval,
        name=name,
        now=time.time(),
        next_url=next_url,
        oob=oob,
        once=once,
        flash=flash,
    )


async def cards(deck: Deck, approvals: list[Approval], next_url: str) -> list[str]:
    names = await agent_names(deck, {a.agent_id for a in approvals})
    return [card_html(a, names[a.agent_id], next_url=next_url) for a in approvals]


async def approval_fragments(
    deck: Deck, batch: list[StoredEvent], *, list_id: str | None, next_url: str
) -> list[str]:
    """Out-of-band swaps for the permission events in ``batch``: new pending cards
    appended to ``list_id`` (if the page has such a list), answered cards turned
    over where they are, and the nav badge's count."""

    async def card(ref: str, new: bool) -> tuple[str, bool] | None:
        if not ref.startswith("ap"):
            return None  # a policy deny without a request: the transcript shows it
        try:
            approval = await deck.approval(ref)
        except NotFound:
            return None
        name = (await agent_names(deck, {approval.agent_id}))[approval.agent_id]
        return card_html(approval, name, next_url=next_url, once=new, oob=not new), new

    async def count() -> str:
        return count_html(await pending_count(deck), oob=True)

    return await shared.fragments(
        batch,
        types=PERMISSION_TYPES,
        asked_type=EventType.PERMISSION_REQUESTED,
        key="request_id",
        list_id=list_id,
        card=card,
        count=count,
    )


@router.get("/approvals", response_class=HTMLResponse)
async def inbox(
    request: Request, answered: int = Query(shared.ANSWERED_PAGE, ge=1, le=shared.MAX_ANSWERED)
) -> HTMLResponse:
    deck = deck_of(request)
    last_id = await deck.last_event_id()
    pending = await deck.approvals(states=[ApprovalState.PENDING], limit=PENDING_LIMIT)
    pending.reverse()  # oldest first: the one that expires first is on top
    done = await deck.approvals(states=ANSWERED, limit=answered + 1)
    return render(
        "approvals.html",
        pending=await cards(deck, pending, "/approvals"),
        answered=await cards(deck, done[:answered], "/approvals"),
        **shared.answered_page(done, answered),
        pending_count=count_label(len(pending)),
        last_id=last_id,
    )


@router.get("/ui/approvals/count", response_class=HTMLResponse)
async def badge(request: Request, poll: bool = False) -> HTMLResponse:
    return HTMLResponse(count_html(await pending_count(deck_of(request)), poll=poll))


@router.post("/ui/approvals/{ref}")
async def answer(request: Request, ref: str) -> Response:
    deck = deck_of(request)
    form = await form_of(request)
    next_url = safe_next(form.get("next", ""))
    choice = ANSWERS.get(form.get("answer", ""))
    scope = form.get("scope", GrantScope.SESSION.value)
    if choice is None or scope not in {s.value for s in GrantScope}:
        return form_error(request, "choose Allow once, Allow always, Deny or Deny always", 400)
    decision, always = choice
    message = form.get("message", "").strip() or None
    conflict: str | None = None
    try:
        approval = await deck.answer(
            ref,
            decision,
            by=actor_label(request, "web"),
            message=message,
            remember=GrantScope(scope) if always else None,
        )
    except InvalidState:
        approval = await deck.approval(ref)
        conflict = f"Already answered: {_how(approval)}. Nothing changed."
    except AgentdeckError as exc:
        return shared.refused(request, exc, what=f"approval request {ref}", log=logger)
    name = (await agent_names(deck, {approval.agent_id}))[approval.agent_id]
    return shared.answered_reply(
        request,
        next_url=next_url,
        conflict=conflict,
        card=lambda flash: card_html(approval, name, next_url=next_url, flash=flash),
        badge=count_html(await pending_count(deck), oob=True),
    )


def _how(approval: Approval) -> str:
    who = approval.answered_by or "nobody"
    when = time.strftime("%H:%M:%S", time.localtime(approval.answered_at or time.time()))
    return f"{approval.state} by {who} at {when}"
