"""The FastAPI application: security, error translation, routers."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentdeck import __version__
from agentdeck.daemon.deck import Deck
from agentdeck.errors import AgentdeckError, to_wire
from agentdeck.settings import Settings
from agentdeck.web.access import authorize
from agentdeck.web.auth import SecurityMiddleware
from agentdeck.web.health import HealthProbes
from agentdeck.web.hooks_api import HookDoor
from agentdeck.web.schemas import COMMON_ERRORS

logger = logging.getLogger(__name__)


async def render_error(_: Request, exc: AgentdeckError) -> JSONResponse:
    """One of our errors as the API answers it. Its class says its status and the
    fields a client rebuilds it from (``errors.from_wire``): a 404 names what was not
    found, without reading it out of the message."""
    return JSONResponse(to_wire(exc), status_code=exc.http_status)


def error_body(status: int, message: str, **extra: object) -> dict[str, object]:
    return {"error": {"status": status, "message": message, **extra}}


def _problem(err: dict[str, Any]) -> dict[str, str]:
    """One invalid field, named as a caller would: ``budget_usd``, ``allow.0``; a body
    that is not JSON at all is the ``body``, with where it breaks."""
    loc: tuple[Any, ...] = tuple(err.get("loc") or ("body",))
    if err.get("type") == "json_invalid":
        error = (err.get("ctx") or {}).get("error", "")
        where = f" at character {loc[1]}" if len(loc) > 1 else ""
        detail = f" ({error})" if error else ""
        return {"field": "body", "problem": f"not valid JSON{where}{detail}"}
    return {"field": ".".join(str(p) for p in loc[1:]) or str(loc[0]), "problem": err["msg"]}


def create_app(deck: Deck, *, token: str, settings: Settings) -> FastAPI:
    from agentdeck.web import (
        api,
        api_checkpoints,
        api_files,
        api_governance,
        api_hooks,
        api_memories,
        api_memory,
        api_notify,
        api_orchestration,
        api_policy_replay,
        api_schedules,
        api_team,
        api_usage,
        api_worktrees,
        dashboard,
        metrics,
        pages_schedules,
        sse,
    )

    app = FastAPI(
        title="agentdeck",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(authorize)],  # every route: the role it needs (web.access)
    )
    app.state.deck = deck
    app.state.settings = settings

    app.add_exception_handler(AgentdeckError, render_error)  # type: ignore[arg-type]

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_problem(err) for err in exc.errors()]
        first = problems[0] if problems else {"field": "?", "problem": "invalid"}
        message = f"invalid {first['field']}: {first['problem']}"
        return JSONResponse(error_body(422, message, problems=problems), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """Starlette's own refusals (no such route, a method a route does not take, a
        body it cannot read) in the API's error shape; pages keep theirs."""
        if not request.url.path.startswith("/api"):
            return await http_exception_handler(request, exc)
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        return JSONResponse(
            error_body(exc.status_code, message), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception) -> JSONResponse:
        """A bug: logged with its traceback; the caller gets the error shape, no trace."""
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        message = f"the daemon failed on this request ({type(exc).__name__}); its log has more"
        return JSONResponse(error_body(500, message), status_code=500)

    app.include_router(api.router, responses=COMMON_ERRORS)
    app.include_router(api_governance.router, responses=COMMON_ERRORS)
    app.include_router(api_policy_replay.router, responses=COMMON_ERRORS)
    app.include_router(api_memory.router, responses=COMMON_ERRORS)
    app.include_router(api_memories.router, responses=COMMON_ERRORS)
    app.include_router(api_orchestration.router, responses=COMMON_ERRORS)
    app.include_router(api_schedules.router, responses=COMMON_ERRORS)
    app.include_router(api_hooks.router, responses=COMMON_ERRORS)
    app.include_router(api_worktrees.router, responses=COMMON_ERRORS)
    app.include_router(api_checkpoints.router, responses=COMMON_ERRORS)
    app.include_router(api_files.router, responses=COMMON_ERRORS)
    app.include_router(api_notify.router, responses=COMMON_ERRORS)
    app.include_router(api_team.router, responses=COMMON_ERRORS)
    app.include_router(api_usage.router, responses=COMMON_ERRORS)
    app.include_router(sse.router, responses=COMMON_ERRORS)
    app.include_router(dashboard.router)
    app.include_router(pages_schedules.router)
    app.include_router(metrics.router)  # GET /metrics, Prometheus' format (web.metrics)
    hosts = [settings.host, *settings.allowed_hosts]
    app.add_middleware(SecurityMiddleware, identity=deck.identity, file_token=token, hosts=hosts)
    # Before the token check: a webhook's HMAC is its credential (web.hooks_api).
    app.add_middleware(HookDoor, deck=deck, hosts=hosts)
    # Outermost (added last): /healthz and /readyz answer before the token check.
    app.add_middleware(HealthProbes, deck=deck, file_token=token, hosts=hosts)
    return app
