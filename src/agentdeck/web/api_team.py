"""Users and tokens under /api (admin only; ``web.access``), and ``/api/whoami``.

A new token's secret is in the answer to its creation and nowhere else, ever.
Revoking a token, or removing its user, ends its sessions and streams at once.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field

from agentdeck.core.roles import Role
from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["team"], responses=errors(400, 404, 409))


class UserBody(Body):
    name: str = Field(min_length=1, max_length=64)
    role: Literal["viewer", "operator", "admin"]


class TokenBody(Body):
    user: str | None = Field(None, description="Whose token (default: the caller's).")
    name: str = Field("", max_length=100, description="What it is for, e.g. 'ci'.")
    expires: str | None = Field(
        None, description="Lifetime such as 30d, 12h, 90m; none: until revoked."
    )


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("/whoami", summary="The user and role behind this request")
async def whoami(request: Request) -> dict[str, Any]:
    principal = request.state.principal
    return {
        "user": request.state.user,
        "role": request.state.role,
        "token": principal.token_id,
        "expires_at": principal.expires_at,
    }


@router.get("/users", summary="Users, by name")
async def list_users(request: Request) -> dict[str, Any]:
    return {"users": [u.to_dict() for u in await _deck(request).users()]}


@router.post("/users", status_code=201, summary="Add a user")
async def add_user(request: Request, body: UserBody) -> dict[str, Any]:
    return (await _deck(request).add_user(body.name, Role(body.role))).to_dict()


@router.delete("/users/{name}", summary="Remove a user; their tokens are revoked")
async def remove_user(request: Request, name: str) -> dict[str, Any]:
    revoked = await _deck(request).remove_user(name)
    return {"removed": name, "revoked_tokens": revoked}


@router.get("/tokens", summary="Tokens (never their secrets)")
async def list_tokens(request: Request, user: str | None = None) -> dict[str, Any]:
    found = await _deck(request).tokens(user=user)
    return {"tokens": [t.to_dict() for t in found]}


@router.post("/tokens", status_code=201, summary="Create a token; its secret is shown once")
async def create_token(request: Request, body: TokenBody) -> dict[str, Any]:
    info, secret = await _deck(request).create_token(
        body.user or request.state.user, name=body.name, expires=body.expires
    )
    return {**info.to_dict(), "token": secret}


@router.delete("/tokens/{ref}", summary="Revoke a token, at once")
async def revoke_token(request: Request, ref: str) -> dict[str, Any]:
    return (await _deck(request).revoke_token(ref)).to_dict()
