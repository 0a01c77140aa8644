"""What each route needs: the one table of roles, and the check every route runs.

Reads need ``viewer``; steering, approving, answering and creating need
``operator``; users and tokens need ``admin``. The check is an app-wide
dependency, so it sees the route a request matched (its path template) and a
route missing from ``ROUTE_ROLES`` is refused to everyone (deny when unsure); a
test walks the OpenAPI document and every route so none can be forgotten.
``/healthz`` and ``/readyz`` are no routes: ``web.health`` answers them before this.
"""

from __future__ import annotations

from contextvars import ContextVar

from fastapi import HTTPException, Request

from agentdeck.core.roles import Principal, Role

V, OP, A = Role.VIEWER, Role.OPERATOR, Role.ADMIN

ROUTE_ROLES: dict[tuple[str, str], Role] = {
    ("GET", "/api/whoami"): V,
    # agents
    ("GET", "/api/agents"): V,
    ("POST", "/api/agents"): OP,
    ("GET", "/api/tree"): V,
    ("GET", "/api/agents/{ref}"): V,
    ("POST", "/api/agents/{ref}/messages"): OP,
    ("POST", "/api/agents/{ref}/interrupt"): OP,
    ("POST", "/api/agents/{ref}/compact"): OP,
    ("POST", "/api/agents/{ref}/kill"): OP,
    ("POST", "/api/agents/{ref}/children"): OP,
    ("POST", "/api/agents/{ref}/resume"): OP,
    ("POST", "/api/agents/{ref}/archive"): OP,
    ("POST", "/api/agents/external"): OP,
    ("POST", "/api/agents/{ref}/deck/{tool}"): OP,
    # a hand-started session's hook events (web.api_hooks): they record and steer it
    ("POST", "/api/hooks/event"): OP,
    ("GET", "/api/agents/{ref}/diff"): V,
    ("POST", "/api/agents/{ref}/merge"): OP,
    ("GET", "/api/agents/{ref}/checkpoints"): V,
    ("POST", "/api/agents/{ref}/rewind"): OP,
    ("POST", "/api/agents/{ref}/files"): OP,
    # events
    ("GET", "/api/events"): V,
    ("GET", "/api/events/stream"): V,
    ("GET", "/api/stats"): V,
    ("GET", "/metrics"): V,  # Prometheus' scrape (web.metrics)
    # governance: a policy check only evaluates, it changes nothing
    ("GET", "/api/approvals"): V,
    ("GET", "/api/approvals/{ref}"): V,
    ("POST", "/api/approvals/{ref}"): OP,
    ("POST", "/api/policy/check"): V,
    ("GET", "/api/policy/profiles"): V,
    ("POST", "/api/policy/replay"): V,  # a what-if: it reads the log, changes nothing
    # memory
    ("GET", "/api/memory/search"): V,
    ("GET", "/api/memory/stats"): V,
    ("GET", "/api/memory/{memory_id}"): V,
    ("DELETE", "/api/memory/{memory_id}"): OP,
    ("DELETE", "/api/memory"): OP,
    # memories the agents propose: deciding is steering what later agents are told
    ("GET", "/api/memories"): V,
    ("GET", "/api/memories/{memory_id}"): V,
    ("POST", "/api/memories/{memory_id}/accept"): OP,
    ("POST", "/api/memories/{memory_id}/reject"): OP,
    ("PATCH", "/api/memories/{memory_id}"): OP,
    # orchestration
    ("GET", "/api/templates"): V,
    ("GET", "/api/templates/{name}"): V,
    ("GET", "/api/asks"): V,
    ("GET", "/api/asks/{ref}"): V,
    ("POST", "/api/asks/{ref}"): OP,
    # schedules: adding, running or changing one starts agents
    ("GET", "/api/schedules"): V,
    ("POST", "/api/schedules"): OP,
    ("GET", "/api/schedules/{name}"): V,
    ("POST", "/api/schedules/{name}/pause"): OP,
    ("POST", "/api/schedules/{name}/resume"): OP,
    ("POST", "/api/schedules/{name}/run"): OP,
    ("DELETE", "/api/schedules/{name}"): OP,
    # worktrees
    ("GET", "/api/merges"): V,
    ("GET", "/api/merges/{ref}"): V,
    ("POST", "/api/merges/{ref}/cancel"): OP,
    # team
    ("GET", "/api/users"): A,
    ("POST", "/api/users"): A,
    ("DELETE", "/api/users/{name}"): A,
    ("GET", "/api/tokens"): A,
    ("POST", "/api/tokens"): A,
    ("DELETE", "/api/tokens/{ref}"): A,
    # notifications: targets are shown without secrets; sending is steering
    ("GET", "/api/notify/targets"): V,
    ("POST", "/api/notify/targets/{name}/test"): OP,
    ("GET", "/api/notify/dead"): V,
    ("GET", "/api/notify/dead/{ref}"): V,
    ("POST", "/api/notify/dead/{ref}/replay"): OP,
    # cost and usage
    ("GET", "/api/usage"): V,
    ("GET", "/api/budgets"): V,
    # a budget holds for everyone's agents: the deck's owner sets it
    ("PUT", "/api/budgets"): A,
    ("DELETE", "/api/budgets"): A,
    ("GET", "/usage"): V,
    ("GET", "/policy"): V,
    # dashboard: pages read, forms steer
    ("GET", "/"): V,
    ("GET", "/activity"): V,
    ("GET", "/agents/{agent_id}"): V,
    ("GET", "/ui/agents/{agent_id}/family"): V,
    ("GET", "/ui/agents/{agent_id}/older"): V,
    ("GET", "/ui/events/{event_id}/output"): V,
    ("GET", "/static/{name}"): V,
    ("POST", "/ui/agents"): OP,
    ("POST", "/ui/agents/{agent_id}/{action}"): OP,
    ("GET", "/approvals"): V,
    ("GET", "/ui/approvals/count"): V,
    ("POST", "/ui/approvals/{ref}"): OP,
    ("GET", "/asks"): V,
    ("GET", "/ui/asks/count"): V,
    ("GET", "/ui/health"): V,
    ("POST", "/ui/asks/{ref}"): OP,
    ("GET", "/ui/agents/{agent_id}/checkpoints"): V,
    ("GET", "/agents/{agent_id}/rewind"): V,
    ("POST", "/ui/agents/{agent_id}/rewind"): OP,
    ("GET", "/ui/agents/{agent_id}/diff"): V,
    ("GET", "/memory"): V,
    ("GET", "/ui/memory/results"): V,
    ("GET", "/memory/{memory_id}"): V,
    ("POST", "/ui/memory/{memory_id}/forget"): OP,
    ("GET", "/memories"): V,
    ("POST", "/ui/memories/{memory_id}/{action}"): OP,
    ("GET", "/merges"): V,
    ("GET", "/schedules"): V,
    ("GET", "/ui/merges"): V,
    ("POST", "/ui/agents/{agent_id}/merge"): OP,
    ("POST", "/ui/merges/{ref}/cancel"): OP,
    ("GET", "/ui/stream"): V,
    ("GET", "/ui/agents/{agent_id}/stream"): V,
}


# The principal of the request being served: set by the security middleware, read by
# the dashboard's templates (who is logged in; whether to draw steering buttons).
CURRENT: ContextVar[Principal | None] = ContextVar("agentdeck_principal", default=None)


def current_principal() -> Principal | None:
    return CURRENT.get()


def can_steer() -> bool:
    """Whether the page's user may steer: a viewer gets no steering buttons (the
    routes refuse them anyway). Outside a request (a template rendered alone) the
    buttons are drawn; every request the daemon serves has its principal."""
    principal = CURRENT.get()
    return principal is None or principal.role.allows(Role.OPERATOR)


def needed_role(method: str, path: str) -> Role | None:
    """The role a route needs; None for a route nobody listed (refused)."""
    return ROUTE_ROLES.get(("GET" if method == "HEAD" else method, path))


def role_of(request: Request) -> Role | None:
    role = getattr(request.state, "role", None)
    return Role(role) if role else None


def may(request: Request, needed: Role) -> bool:
    """Whether the user behind this request has ``needed`` (templates ask it)."""
    role = role_of(request)
    return role is not None and role.allows(needed)


async def authorize(request: Request) -> None:
    """The app-wide dependency: the user's role against the route's entry."""
    route = request.scope.get("route")
    template = getattr(route, "path", None)
    needed = needed_role(request.method, str(template)) if template else None
    role = role_of(request)
    if needed is None:
        raise HTTPException(403, f"{request.method} {template} has no role entry: refused")
    if role is None or not role.allows(needed):
        raise HTTPException(
            403,
            f"this needs the {needed} role; {getattr(request.state, 'user', '?')} is "
            f"{role or 'nobody'}",
        )
