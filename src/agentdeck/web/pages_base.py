"""What every dashboard module shares: the template environment and the Deck."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from agentdeck.daemon.deck import Deck
from agentdeck.errors import NotFound
from agentdeck.web.pages_render import make_env

env = make_env()


def deck_of(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


def render_text(template: str, **context: Any) -> str:
    return env.get_template(template).render(**context)


def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render_text(template, **context), status_code=status_code)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


async def agent_names(deck: Deck, ids: set[str]) -> dict[str, str]:
    """Names for a handful of agent ids (a feed page's worth)."""
    out = {}
    for agent_id in ids:
        try:
            out[agent_id] = (await deck.get_agent(agent_id)).name
        except NotFound:
            out[agent_id] = agent_id
    return out
