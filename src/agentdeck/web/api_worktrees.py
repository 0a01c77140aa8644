"""What an agent in a worktree changed, under /api."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import Field

from agentdeck.core.merge_queue import MergeState
from agentdeck.daemon.deck import Deck
from agentdeck.web.api import AgentRef
from agentdeck.web.auth import channel_of
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["worktrees"], responses=errors(400, 404, 409))


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
    return (await deck.diff(ref, against=against, patch=not stat)).to_dict()


class MergeIn(Body):
    into: str | None = Field(None, min_length=1, description="Default: the branch it started from.")
    strategy: Literal["merge", "squash", "rebase"] = "merge"
    test: str | None = Field(
        None,
        description="The command the combination must pass (default: `test` of the "
        "target's .agentdeck/merge.yaml, or none), run in the sandbox of the agent's profile.",
    )


@router.post("/agents/{ref}/merge", summary="Land an agent's branch, test-gated")
async def agent_merge(
    request: Request,
    response: Response,
    ref: AgentRef,
    body: MergeIn,
    wait: Annotated[
        bool, Query(description="Answer with the outcome (true), or at once, queued (false: 202).")
    ] = True,
) -> dict[str, Any]:
    """Put its branch in its repository's merge queue, which takes one entry at a
    time: combined with the latest target in a scratch worktree, tested there, and
    the target moved to exactly that tested commit. The test runs in the sandbox of
    the agent's profile (what it runs is the branch's), and its output is scrubbed
    of secrets. ``landed`` false says why: conflicts (with the files), failing
    tests (with the output's tail), nothing to merge, a required sandbox this
    machine cannot give. Either way a ``merge`` notice and an audit entry record it."""
    deck: Deck = request.app.state.deck
    entry = await deck.merge(
        ref, into=body.into, strategy=body.strategy, test=body.test, by=channel_of(request),
        wait=wait,
    )  # fmt: skip
    if not wait:
        response.status_code = 202
    return entry.result()


@router.get("/merges", summary="The merge queue")
async def list_merges(
    request: Request,
    state: Annotated[
        list[MergeState],
        Query(description="Only these states (repeat the parameter); default: all."),
    ] = [],  # noqa: B006 - FastAPI copies the default
    agent: Annotated[str | None, Query(description="Only this agent's (id or prefix).")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Entries newest first: what waits (``queued``), what is being merged, and how
    the others ended."""
    deck: Deck = request.app.state.deck
    found = await deck.merges(states=state or None, agent_id=agent or None, limit=limit)
    return {"merges": [e.result() for e in found]}


@router.get("/merges/{ref}", summary="One entry of the merge queue")
async def get_merge(request: Request, ref: str) -> dict[str, Any]:
    deck: Deck = request.app.state.deck
    return (await deck.merge_entry(ref)).result()


@router.post("/merges/{ref}/cancel", summary="Take a queued merge out of the queue")
async def cancel_merge(request: Request, ref: str) -> dict[str, Any]:
    """Only a ``queued`` entry can be cancelled (409 otherwise)."""
    deck: Deck = request.app.state.deck
    return (await deck.cancel_merge(ref, by=channel_of(request))).result()
