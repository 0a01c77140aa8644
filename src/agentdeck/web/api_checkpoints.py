"""An agent's checkpoints, and rewinding its workspace to one, under /api."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from agentdeck.daemon.deck import Deck
from agentdeck.web.api import AgentRef
from agentdeck.web.auth import channel_of
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["checkpoints"], responses=errors(400, 404, 409))


@router.get("/agents/{ref}/checkpoints", summary="An agent's checkpoints")
async def agent_checkpoints(request: Request, ref: AgentRef) -> dict[str, Any]:
    """Oldest first: one before each of its file-changing tool calls (Write, Edit,
    MultiEdit, NotebookEdit, Bash), with the files the call before it changed and the
    files left out for their size."""
    deck: Deck = request.app.state.deck
    agent = await deck.get_agent(ref)
    found = await deck.checkpoints(agent.id)
    return {"agent_id": agent.id, "checkpoints": [c.to_dict() for c in found]}


class RewindIn(Body):
    to: int | None = Field(None, ge=1, description="The checkpoint (default: the last one).")
    dry_run: bool = Field(
        False, description="Say what would change, with the patch; change nothing."
    )


@router.post("/agents/{ref}/rewind", summary="Put an agent's files back as they were")
async def agent_rewind(request: Request, ref: AgentRef, body: RewindIn) -> dict[str, Any]:
    """The workspace's files as they were at checkpoint ``to``, just before its tool
    call: changed and deleted files restored, files created since removed; ignored
    and oversize files left alone. A checkpoint is taken first (``undo``). 409 while
    the agent works; a ``rewind`` notice and an audit entry record it."""
    deck: Deck = request.app.state.deck
    done = await deck.rewind(ref, to=body.to, dry_run=body.dry_run, by=channel_of(request))
    return done.to_dict()
