"""What an agent in a worktree changed, under /api."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from agentdeck.core.redact import scrub
from agentdeck.daemon.deck import Deck
from agentdeck.web.api import AgentRef
from agentdeck.web.auth import channel_of
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


class MergeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    into: str | None = Field(None, min_length=1, description="Default: the branch it started from.")
    strategy: Literal["merge", "squash", "rebase"] = "merge"
    test: str | None = Field(
        None,
        description="The command the combination must pass (default: `test` of the "
        "target's .agentdeck/merge.yaml, or none).",
    )


@router.post("/agents/{ref}/merge", summary="Land an agent's branch, test-gated")
async def agent_merge(request: Request, ref: AgentRef, body: MergeIn) -> dict[str, Any]:
    """Combine its branch with the latest target in a scratch worktree, run the test
    there, and move the target to exactly that tested commit; one merge at a time per
    repository. ``landed`` false says why: conflicts (with the files), failing tests
    (with the output's tail), nothing to merge. Either way a ``merge`` notice and an
    audit entry record it."""
    deck: Deck = request.app.state.deck
    agent = await deck.get_agent(ref)
    outcome = await deck.runner.merge(
        agent, into=body.into, strategy=body.strategy, test=body.test, by=channel_of(request)
    )
    return outcome.to_dict()
