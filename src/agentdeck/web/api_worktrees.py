"""What an agent in a worktree changed, under /api."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from agentdeck.core.redact import scrub
from agentdeck.daemon.deck import Deck
from agentdeck.web.api import AgentRef
from agentdeck.worktrees import worktree_of

router = APIRouter(prefix="/api", tags=["worktrees"])


@router.get("/agents/{ref}/diff", summary="What an agent in a worktree changed")
async def agent_diff(
    request: Request,
    ref: AgentRef,
    against: Annotated[
        str | None,
        Query(description="Compare with where its branch left this ref (default: its start)."),
    ] = None,
    stat: Annotated[bool, Query(description="Only the files, without the patch.")] = False,
) -> dict[str, Any]:
    """Its commits and its uncommitted work, per file (lines added and removed, null
    for a binary file) and as a patch (scrubbed of secrets, like the event log),
    against the commit it started from. 400 for an agent without a worktree."""
    deck: Deck = request.app.state.deck
    agent = await deck.get_agent(ref)
    worktree = worktree_of(agent)
    changes = await deck.runner.worktrees.diff(worktree, against=against, patch=not stat)
    found = changes.to_dict(agent, worktree)
    found["patch"] = scrub(changes.patch)  # a viewer like the event log: no secrets
    return found
