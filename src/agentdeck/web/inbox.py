"""What the dashboard's two inboxes share: permission requests (``pages_approvals``)
and workers' questions (``pages_asks``) are each a list of cards, pending first,
with a page of answered ones, a nav badge, live swaps from the streams, and an
answer form whose reply is the card turned over (or an error)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentdeck.core.events import EventType, StoredEvent
from agentdeck.errors import AgentdeckError, NotFound
from agentdeck.web.pages_base import card_swaps, form_error, is_htmx

PENDING_LIMIT = 100  # an inbox shows this many pending; the badge says "99+" beyond
ANSWERED_PAGE = 25
MAX_ANSWERED = 500

Card = Callable[[str, bool], Awaitable[tuple[str, bool] | None]]


def count_label(n: int) -> str:
    return "" if n <= 0 else f"{PENDING_LIMIT - 1}+" if n >= PENDING_LIMIT else str(n)


def safe_next(value: str, default: str = "/approvals") -> str:
    """Where a plain form post goes back to: a path on this site, nothing else."""
    # Browsers drop tabs and newlines from URLs (``/\t/evil`` is ``//evil``):
    # control characters and backslashes never pass.
    clean = value.isprintable() and "\\" not in value
    ok = clean and value.startswith("/") and not value.startswith("//")
    return value if ok else default


def answered_page(done: Sequence[Any], answered: int) -> dict[str, Any]:
    """The answered part of an inbox page: ``done`` was loaded with one more than
    ``answered``, which says whether a "more" link is due."""
    return {
        "more": len(done) > answered,
        "shown": answered,
        "next_more": min(answered * 2, MAX_ANSWERED),
    }


async def fragments(
    batch: Sequence[StoredEvent],
    *,
    types: Collection[EventType],
    asked_type: EventType,
    key: str,
    list_id: str | None,
    card: Card,
    count: Callable[[], Awaitable[str]],
) -> list[str]:
    """Out-of-band swaps for an inbox's events in ``batch`` (those of ``types``,
    naming their card by ``data[key]``): new cards appended to ``list_id`` (if the
    page has such a list), answered cards turned over where they are, and the nav
    badge (``count``)."""
    events = [e for e in batch if e.type in types]
    if not events:
        return []
    parts: list[str] = []
    if list_id is not None:
        asked = {str(e.data.get(key)) for e in events if e.type == asked_type}
        refs = [str(e.data.get(key, "")) for e in events]
        parts += await card_swaps(refs, asked, list_id, card)
    parts.append(await count())
    return parts


def refused(request: Request, exc: AgentdeckError, *, what: str, log: Any) -> Response:
    """An answer that could not be given: 404 for an unknown ``what``, else 400."""
    if isinstance(exc, NotFound):
        return form_error(request, f"there is no {what}", 404)
    log.info("dashboard answer to %s refused: %s", what, exc.message)
    return form_error(request, f"could not answer: {exc.message}", 400)


def answered_reply(
    request: Request,
    *,
    next_url: str,
    conflict: str | None,
    card: Callable[[dict[str, Any] | None], str],
    badge: str,
) -> Response:
    """After an answer: a plain form goes back to ``next_url`` (409 on a
    ``conflict``: it was answered already); htmx gets the card turned over, with
    the conflict as its flash, and the badge."""
    if not is_htmx(request):
        if conflict is not None:
            return form_error(request, conflict, 409)
        return RedirectResponse(next_url, status_code=303)
    flash = {"ok": False, "message": conflict} if conflict else None
    return HTMLResponse(card(flash) + badge, status_code=409 if conflict else 200)
