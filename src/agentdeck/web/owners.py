"""Whose agent a request starts: the authenticated user's (``request.state.user``,
set by the auth middleware once users exist), else ``admin``: the legacy single
token is the first admin's."""

from __future__ import annotations

from dataclasses import replace

from fastapi import Request

from agentdeck.core.agent import AgentSpec
from agentdeck.core.usage import DEFAULT_OWNER


def request_user(request: Request) -> str:
    user = getattr(request.state, "user", None)
    return user if isinstance(user, str) and user else DEFAULT_OWNER


def owned(spec: AgentSpec, request: Request) -> AgentSpec:
    """``spec`` as the request's user's: a client never names the owner itself."""
    return replace(spec, owner=request_user(request))
