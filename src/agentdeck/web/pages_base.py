"""What every dashboard module shares: the template environment and the Deck."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from agentdeck.core.agent import Agent
from agentdeck.daemon.deck import Deck
from agentdeck.errors import NotFound
from agentdeck.web.pages_render import make_env

env = make_env()


def deck_of(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


async def agent_partial(
    request: Request, agent_id: str, make: Callable[[Deck, Agent], Awaitable[str]]
) -> HTMLResponse:
    """A panel of the agent page, polled on its own (404 and empty for no agent)."""
    deck = deck_of(request)
    try:
        agent = await deck.get_agent(agent_id)
    except NotFound:
        return HTMLResponse("", status_code=404)
    return HTMLResponse(await make(deck, agent))


def render_text(template: str, **context: Any) -> str:
    return env.get_template(template).render(**context)


def render(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render_text(template, **context), status_code=status_code)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def form_error(
    request: Request, message: str, status: int = 400, *, htmx_status: int | None = None
) -> HTMLResponse:
    """A refused form: a fragment for htmx (shown where the form is: with a 2xx
    ``htmx_status`` unless the page swaps errors in itself), a page for a plain post."""
    if is_htmx(request):
        code = status if htmx_status is None else htmx_status
        return render("_form_error.html", status_code=code, message=message)
    return render("form_error.html", status_code=status, message=message)


# Renders one inbox card: (its HTML, whether it is a new card), or None.
Card = Callable[[str, bool], Awaitable[tuple[str, bool] | None]]


async def card_swaps(refs: Iterable[str], asked: set[str], list_id: str, card: Card) -> list[str]:
    """Out-of-band swaps for an inbox's cards: ``card(ref, was_asked)`` renders
    one; a new card is appended to ``list_id``, another replaces its card where
    it is (it carries ``hx-swap-oob`` itself)."""
    parts = []
    for ref in dict.fromkeys(refs):
        drawn = await card(ref, ref in asked)
        if drawn is None:
            continue
        html, new = drawn
        parts.append(f'<div hx-swap-oob="beforeend:{list_id}">{html}</div>' if new else html)
    return parts


async def agent_names(deck: Deck, ids: set[str]) -> dict[str, str]:
    """Names for a handful of agent ids (a feed page's worth)."""
    out = {}
    for agent_id in ids:
        try:
            out[agent_id] = (await deck.get_agent(agent_id)).name
        except NotFound:
            out[agent_id] = agent_id
    return out
