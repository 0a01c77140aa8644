"""The schedules page (``/schedules``): each schedule's rule, its next due times and
its newest runs, each run that started an agent linking to it."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from agentdeck.web.pages_base import deck_of, render

router = APIRouter(include_in_schema=False)

SHOWN = 200  # schedules on the page
RUNS_SHOWN = 10  # runs per schedule


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


@router.get("/schedules", response_class=HTMLResponse)
async def schedules_page(request: Request) -> HTMLResponse:
    deck = deck_of(request)
    views = [await deck.schedule(s.name) for s in (await deck.schedules())[:SHOWN]]
    return render("schedules.html", nav="schedules", views=views, when=_when, runs_shown=RUNS_SHOWN)
