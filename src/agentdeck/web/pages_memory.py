"""Memory on the dashboard: search (``/memory``), one record (``/memory/{id}``)
and its Forget button.

The search box asks ``/ui/memory/results`` through htmx as one types; the
whole page renders the same results without JavaScript. Forget is a POST,
guarded like every page action: the session cookie is ``SameSite=Strict`` and
the security middleware refuses a foreign ``Origin``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from agentdeck.core.memory import MemoryHit
from agentdeck.core.snippets import snippet_parts
from agentdeck.core.summary import age as elapsed
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError, NotFound
from agentdeck.web import pages_approvals
from agentdeck.web.inbox import safe_next
from agentdeck.web.pages_actions import form_of
from agentdeck.web.pages_base import deck_of, form_error, is_htmx, render

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

RESULTS = 25


def age(ts: float) -> str:
    """How long ago ``ts`` was, compact (``3h``)."""
    return elapsed(time.time() - ts)


def marked(snippet: str) -> Markup:
    """The snippet escaped, its matched terms in ``<mark>``."""
    return Markup(
        "".join(
            f"<mark>{escape(part)}</mark>" if matched else str(escape(part))
            for part, matched in snippet_parts(snippet)
        )
    )


async def _search(request: Request, q: str, project: str) -> dict[str, Any]:
    q, project = q.strip(), project.strip()
    hits: list[MemoryHit] = []
    error: str | None = None
    if project and not project.startswith("/"):
        error = f"the project must be an absolute directory, not {project!r}"
    elif q:
        where = Deck.memory_project(project)
        hits = await deck_of(request).memory_search(q, project=where, limit=RESULTS)
    return {"q": q, "project": project, "hits": hits, "error": error, "age": age, "marked": marked}


@router.get("/memory", response_class=HTMLResponse)
async def memory_page(request: Request, q: str = "", project: str = "") -> HTMLResponse:
    deck = deck_of(request)
    context = await _search(request, q, project)
    return render(
        "memory.html",
        **context,
        stats=await deck.memory_stats(),
        forgotten=request.query_params.get("forgotten"),
        pending_count=await pages_approvals.pending_count(deck),
    )


@router.get("/ui/memory/results", response_class=HTMLResponse)
async def results(request: Request, q: str = "", project: str = "") -> HTMLResponse:
    return render("_memory_results.html", **await _search(request, q, project))


@router.get("/memory/{memory_id}", response_class=HTMLResponse)
async def record_page(request: Request, memory_id: str, back: str = Query("")) -> HTMLResponse:
    deck = deck_of(request)
    count = await pages_approvals.pending_count(deck)
    try:
        record = await deck.memory_record(memory_id)
    except NotFound:
        return render(
            "not_found.html",
            status_code=404,
            what=f"memory record {memory_id}",
            pending_count=count,
        )
    return render(
        "memory_record.html",
        record=record,
        kind="observation" if record.id.startswith("ob") else "session summary",
        text=Deck.memory_text(record),
        back=safe_next(back, "/memory"),
        pending_count=count,
    )


@router.post("/ui/memory/{memory_id}/forget")
async def forget(request: Request, memory_id: str) -> Response:
    form = await form_of(request)
    back = safe_next(form.get("next", ""), "/memory")
    try:
        forgotten = await deck_of(request).forget_memory(memory_id=memory_id)
    except NotFound:
        forgotten = 0
    except AgentdeckError as exc:
        logger.info("dashboard forget of %s refused: %s", memory_id, exc.message)
        return form_error(request, f"could not forget: {exc.message}", 400)
    if forgotten == 0:
        return form_error(request, f"there is no memory record {memory_id}", 404)
    logger.info("memory record %s forgotten from the dashboard", memory_id)
    url = back + ("&" if "?" in back else "?") + f"forgotten={memory_id}"
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)
