"""The Policy page: the built-in profiles and a what-if on history — the event
log's tool calls re-decided under a candidate profile (``Deck.policy_replay``),
the calls whose decision would change grouped by the rule that decides now.

The page takes a built-in profile (the daemon reads no file for a caller; a
profile file is replayed with ``agentdeck policy replay --profile FILE``). Every
text on it that came from the log (inputs, rules, reasons) is escaped by the
template and was scrubbed and cut short by ``core.policy_replay``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from agentdeck.core.policy_replay import PolicyReplay
from agentdeck.core.usage import parse_since
from agentdeck.errors import AgentdeckError
from agentdeck.web.pages_base import deck_of, render

router = APIRouter(include_in_schema=False)

PERIODS = ("24h", "7d", "30d", "all")


@router.get("/policy", response_class=HTMLResponse)
async def policy_page(request: Request) -> HTMLResponse:
    deck = deck_of(request)
    q = request.query_params
    profiles = await deck.policy_profiles()
    chosen = {
        "profile": q.get("profile", ""),
        "since": q.get("since", "7d"),
        "agent": q.get("agent", "").strip(),
        "project": q.get("project", "").strip(),
    }
    report: PolicyReplay | None = None
    problem: str | None = None
    status = 200
    if chosen["profile"]:
        try:
            since = None if chosen["since"] == "all" else parse_since(chosen["since"])
            report = await deck.policy_replay(
                chosen["profile"],
                since_seconds=since,
                agent=chosen["agent"] or None,
                project=chosen["project"] or None,
            )
        except AgentdeckError as exc:
            problem, status = exc.message, exc.http_status
    return render(
        "policy.html",
        status_code=status,
        nav="policy",
        profiles=profiles,
        periods=PERIODS,
        chosen=chosen,
        report=report,
        problem=problem,
    )
