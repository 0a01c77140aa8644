"""The deck's health in the dashboard's top bar: nothing while it is ok; a small
``degraded`` or ``unhealthy`` mark, its reasons in the title, once it is not (the
Deck's ``readiness``: the event loop's lag, the store, the runner, the disk).
Polled by every page (``base.html``); the store's write probe is made at most every
few seconds however many pages poll."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from agentdeck.core.health import HealthStatus, Readiness
from agentdeck.web.pages_base import deck_of, render_text

router = APIRouter(include_in_schema=False)


def health_html(readiness: Readiness) -> str:
    return render_text(
        "_health.html",
        status=str(readiness.status),
        bad=readiness.status is not HealthStatus.OK,
        reasons=readiness.reasons,
    )


@router.get("/ui/health", response_class=HTMLResponse)
async def health_mark(request: Request) -> HTMLResponse:
    return HTMLResponse(health_html(await deck_of(request).readiness()))
