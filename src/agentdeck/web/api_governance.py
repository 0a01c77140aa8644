"""Approvals and policy under /api: the same inbox as the dashboard and the CLI."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import Field, field_validator

from agentdeck.core.approvals import ApprovalState, GrantScope
from agentdeck.daemon.deck import Deck
from agentdeck.web.auth import channel_of
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["governance"], responses=errors(400, 404, 409))


class AnswerBody(Body):
    decision: Literal["allow", "deny"]
    always: bool = Field(False, description="Remember this answer as a grant.")
    scope: Literal["session", "persistent"] = Field(
        "persistent", description="With always: for this agent's session, or from now on."
    )
    message: str | None = Field(None, description="Passed to the agent with the answer.")


class CheckBody(Body):
    tool: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)
    profile: str | None = Field(
        None, description="A built-in profile's name; absent: the daemon's own profile"
    )
    cwd: str | None = Field(
        None, description="The agent's workspace, an absolute path (default: the daemon's)"
    )
    home: str | None = Field(
        None, description="The home `~` stands for, an absolute path (default: the daemon's)"
    )

    @field_validator("cwd", "home")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("must be an absolute path")
        return value


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("/approvals")
async def list_approvals(
    request: Request,
    state: list[ApprovalState] = Query(default=[ApprovalState.PENDING]),  # noqa: B008
    agent: str | None = None,
    limit: int = Query(100, ge=1, le=1000),
) -> dict[str, Any]:
    found = await _deck(request).approvals(states=state or None, agent_id=agent, limit=limit)
    return {"approvals": [a.to_dict() for a in found]}


@router.get("/approvals/{ref}")
async def get_approval(request: Request, ref: str) -> dict[str, Any]:
    return (await _deck(request).approval(ref)).to_dict()


@router.post("/approvals/{ref}")
async def answer_approval(request: Request, ref: str, body: AnswerBody) -> dict[str, Any]:
    remember = GrantScope(body.scope) if body.always else None
    answered = await _deck(request).answer(
        ref, body.decision, by=channel_of(request), message=body.message, remember=remember
    )
    return answered.to_dict()


@router.post("/policy/check")
async def policy_check(request: Request, body: CheckBody) -> dict[str, Any]:
    found = await _deck(request).policy_check(
        body.tool, body.input, profile=body.profile, cwd=body.cwd, home=body.home
    )
    return found.to_dict()


@router.get("/policy/profiles", summary="The built-in policy profiles")
async def policy_profiles(request: Request) -> dict[str, Any]:
    return {"profiles": [p.to_dict() for p in await _deck(request).policy_profiles()]}
