"""``POST /api/policy/replay``: policy what-if on history (``Deck.policy_replay``).

A candidate profile is a built-in name, or the text of a profile the caller read
(the daemon reads no file for a caller). It only evaluates: nothing changes. One
runs at a time: a second is refused (409) while one is under way.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from agentdeck.core.policy_replay import MAX_PROFILE_TEXT
from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["governance"], responses=errors(400, 404, 409, 422))


class ReplayBody(Body):
    profile: str = Field(
        min_length=1,
        max_length=4096,
        description="A built-in profile's name; with profile_text, the file's name "
        "(a name ending in .json reads the text as a Claude Code settings.json)",
    )
    profile_text: str | None = Field(
        None,
        max_length=MAX_PROFILE_TEXT,
        description="The candidate profile's YAML (or settings.json) text",
    )
    since_seconds: float | None = Field(
        None, description="Only the calls of the last this many seconds (default: all)"
    )
    agent: str | None = Field(
        None, max_length=4096, description="Only this agent's calls (id, prefix or name)"
    )
    project: str | None = Field(
        None, max_length=4096, description="Only the calls of agents in this absolute directory"
    )


@router.post("/policy/replay", summary="Re-decide the history's tool calls under a profile")
async def policy_replay(request: Request, body: ReplayBody) -> dict[str, Any]:
    deck: Deck = request.app.state.deck
    found = await deck.policy_replay(
        body.profile,
        profile_text=body.profile_text,
        since_seconds=body.since_seconds,
        agent=body.agent,
        project=body.project,
    )
    return found.to_dict()
