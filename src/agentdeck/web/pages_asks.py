"""The Asks inbox on the dashboard: workers' questions, answered by a person.

A question is one card (``_ask.html``): who asks, whom it was put to (its
orchestrator, or a person), the question, the time left before the worker goes
on without an answer, and an answer box. Whoever it was put to, a person may
answer it. The answer goes through ``Deck.answer_ask(..., by="user:web:<user>")``; the
streams (``pages_stream``) use ``ask_fragments`` to add new cards, turn answered
ones over and refresh the count in the top bar, live.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from agentdeck.core.asks import Ask, AskState
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError, InvalidState, NotFound, UsageError
from agentdeck.web import inbox as shared
from agentdeck.web.auth import actor_label
from agentdeck.web.inbox import PENDING_LIMIT, count_label, safe_next
from agentdeck.web.pages_actions import form_of
from agentdeck.web.pages_approvals import pending_count as approvals_count
from agentdeck.web.pages_base import (
    agent_names,
    deck_of,
    form_error,
    is_htmx,
    render,
    render_text,
)

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

ANSWERED = [AskState.ANSWERED, AskState.EXPIRED, AskState.CANCELLED]
MAX_ANSWER_CHARS = 20_000
ASK_TYPES = frozenset({EventType.QUESTION_ASKED, EventType.QUESTION_ANSWERED})


async def pending_count(deck: Deck) -> str:
    found = await deck.asks(states=[AskState.PENDING], limit=PENDING_LIMIT)
    return count_label(len(found))


def count_html(count: str, *, oob: bool = False) -> str:
    return render_text("_asks_count.html", asks_count=count, oob=oob)


def card_html(
    ask: Ask,
    names: dict[str, str],
    *,
    next_url: str,
    oob: bool = False,
    once: bool = False,
    flash: dict[str, Any] | None = None,
) -> str:
    return render_text(
        "_ask.html",
        a=ask,
        name=names.get(ask.agent_id, ask.agent_id),
        to_name=names.get(ask.to_agent_id or "", ask.to_agent_id),
        now=time.time(),
        next_url=next_url,
        oob=oob,
        once=once,
        flash=flash,
    )


async def _names(deck: Deck, asks: list[Ask]) -> dict[str, str]:
    ids = {a.agent_id for a in asks} | {a.to_agent_id for a in asks if a.to_agent_id}
    return await agent_names(deck, ids)


async def cards(deck: Deck, asks: list[Ask], next_url: str) -> list[str]:
    names = await _names(deck, asks)
    return [card_html(a, names, next_url=next_url) for a in asks]


async def ask_fragments(
    deck: Deck, batch: list[StoredEvent], *, list_id: str | None, next_url: str
) -> list[str]:
    """Out-of-band swaps for the question events in ``batch``: new cards appended
    to ``list_id`` (if the page has such a list), answered cards turned over
    where they are, and the nav badge's count."""

    async def card(ref: str, asked_now: bool) -> tuple[str, bool] | None:
        try:
            ask = await deck.ask(ref)
        except NotFound:
            return None
        new = asked_now and ask.state.is_open  # answered at once: drawn in place
        names = await _names(deck, [ask])
        return card_html(ask, names, next_url=next_url, once=new, oob=not new), new

    async def count() -> str:
        return count_html(await pending_count(deck), oob=True)

    return await shared.fragments(
        batch,
        types=ASK_TYPES,
        asked_type=EventType.QUESTION_ASKED,
        key="ask_id",
        list_id=list_id,
        card=card,
        count=count,
    )


async def _choose(request: Request, deck: Deck, asked: Ask, text: str, next_url: str) -> Response:
    """A multiple choice answered from its card: one that cannot be taken (nothing
    picked, say) comes back as the card again, saying why, still open."""
    try:
        ask = await deck.answer_ask(asked.id, text, by=actor_label(request, "web"))
        conflict = None
    except UsageError as exc:
        if not is_htmx(request):
            raise
        names = await _names(deck, [asked])
        flash = {"ok": False, "message": f"Not answered: {exc.message}"}
        card = card_html(asked, names, next_url=next_url, flash=flash)
        return HTMLResponse(card, status_code=400)
    except InvalidState:
        ask = await deck.ask(asked.id)
        conflict = f"Already {ask.state} by {ask.answered_by or 'nobody'}. Nothing changed."
    names = await _names(deck, [ask])
    return shared.answered_reply(
        request,
        next_url=next_url,
        conflict=conflict,
        card=lambda flash: card_html(ask, names, next_url=next_url, flash=flash),
        badge=count_html(await pending_count(deck), oob=True),
    )


def chosen(ask: Ask, form: dict[str, str]) -> str:
    """A multiple choice's form (``q<N>``: the option picked; ``q<N>_<i>``: each
    one ticked where several may be; ``q<N>_other``: other words, which win) as
    the text ``answer_ask`` checks: ``1=…`` lines."""
    lines = []
    for n, q in enumerate(ask.questions, 1):
        value = form.get(f"q{n}_other", "").strip()
        if not value and q.multi_select:
            ticked = [str(i) for i in range(1, len(q.options) + 1) if form.get(f"q{n}_{i}")]
            value = ",".join(ticked)
        lines.append(f"{n}={value or form.get(f'q{n}', '').strip()}")
    return "\n".join(lines)


@router.get("/asks", response_class=HTMLResponse)
async def inbox(
    request: Request, answered: int = Query(shared.ANSWERED_PAGE, ge=1, le=shared.MAX_ANSWERED)
) -> HTMLResponse:
    deck = deck_of(request)
    last_id = await deck.last_event_id()
    pending = await deck.asks(states=[AskState.PENDING], limit=PENDING_LIMIT)
    pending.reverse()  # oldest first: the worker that has waited longest is on top
    done = await deck.asks(states=ANSWERED, limit=answered + 1)
    return render(
        "asks.html",
        pending=await cards(deck, pending, "/asks"),
        answered=await cards(deck, done[:answered], "/asks"),
        **shared.answered_page(done, answered),
        asks_count=count_label(len(pending)),
        pending_count=await approvals_count(deck),
        last_id=last_id,
    )


@router.get("/ui/asks/count", response_class=HTMLResponse)
async def badge(request: Request) -> HTMLResponse:
    return HTMLResponse(count_html(await pending_count(deck_of(request))))


@router.post("/ui/asks/{ref}")
async def answer(request: Request, ref: str) -> Response:
    deck = deck_of(request)
    form = await form_of(request)
    next_url = safe_next(form.get("next", ""), "/asks")
    text = form.get("answer", "").strip()
    if not text and any(k.startswith("q") for k in form):
        try:
            asked = await deck.ask(ref)
            return await _choose(request, deck, asked, chosen(asked, form), next_url)
        except AgentdeckError as exc:
            return shared.refused(request, exc, what=f"question {ref}", log=logger)
    if not text:
        return form_error(request, "write an answer", 400)
    if len(text) > MAX_ANSWER_CHARS:
        return form_error(request, f"an answer has at most {MAX_ANSWER_CHARS:,} characters", 400)
    conflict: str | None = None
    try:
        ask = await deck.answer_ask(ref, text, by=actor_label(request, "web"))
    except InvalidState:
        ask = await deck.ask(ref)
        conflict = f"Already {ask.state} by {ask.answered_by or 'nobody'}. Nothing changed."
    except AgentdeckError as exc:
        return shared.refused(request, exc, what=f"question {ref}", log=logger)
    names = await _names(deck, [ask])
    return shared.answered_reply(
        request,
        next_url=next_url,
        conflict=conflict,
        card=lambda flash: card_html(ask, names, next_url=next_url, flash=flash),
        badge=count_html(await pending_count(deck), oob=True),
    )
