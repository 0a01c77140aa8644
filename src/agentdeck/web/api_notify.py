"""Notification targets and dead letters, under /api/notify."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import errors

router = APIRouter(prefix="/api/notify", tags=["notify"])

TargetName = Annotated[str, Path(description="The target's name in the notification config.")]
LetterRef = Annotated[str, Path(description="The dead letter's id (or a unique prefix).")]


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("/targets", summary="The notification targets")
async def list_targets(request: Request) -> dict[str, Any]:
    """Each configured target: its kind, the kinds of notification it takes, its
    filters, and how its deliveries went (delivered, dead, queued, last error).
    Secrets are never shown, and of a URL only its origin."""
    return {"targets": [t.to_dict() for t in await _deck(request).notify_targets()]}


@router.post(
    "/targets/{name}/test",
    summary="Send a test notification",
    responses=errors(404, 502, e502="The target did not take it: the message says why"),
)
async def test_target(request: Request, name: TargetName) -> dict[str, Any]:
    """One test notification to the target, now, without retries. 404 for an
    unknown target; 502 when the target fails (an error status, no answer within
    AGENTDECK_NOTIFY_TIMEOUT_SECONDS, notify-send missing)."""
    return (await _deck(request).test_notify_target(name)).to_dict()


@router.get("/dead", summary="Dead letters: notifications that were not delivered")
async def list_dead(
    request: Request,
    all_: Annotated[bool, Query(alias="all", description="Also those replayed since.")] = False,
    target: Annotated[str | None, Query(description="Only this target's.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Newest first, each with its target, payload, why it failed and how often."""
    letters = await _deck(request).dead_letters(include_replayed=all_, target=target, limit=limit)
    return {"dead": [letter.to_dict() for letter in letters]}


@router.get("/dead/{ref}", summary="One dead letter", responses=errors(404))
async def get_dead(request: Request, ref: LetterRef) -> dict[str, Any]:
    return (await _deck(request).dead_letter(ref)).to_dict()


@router.post(
    "/dead/{ref}/replay",
    summary="Deliver a dead letter again",
    responses=errors(
        404,
        409,
        502,
        e409="Replayed already, or its target is no longer configured",
        e502="The target failed again: the letter stays dead, one attempt more",
    ),
)
async def replay_dead(request: Request, ref: LetterRef) -> dict[str, Any]:
    """One attempt, now, to the letter's target; on success it is ``replayed``."""
    return (await _deck(request).replay_dead_letter(ref)).to_dict()
