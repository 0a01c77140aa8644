"""The FastAPI application: security, error translation, routers."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from agentdeck import __version__
from agentdeck.daemon.deck import Deck
from agentdeck.errors import (
    AgentdeckError,
    AgentProcessError,
    ConfigError,
    InvalidState,
    NotFound,
    PolicyDenied,
    PolicyError,
    Refused,
    ScenarioError,
    TemplateError,
    UsageError,
)
from agentdeck.settings import Settings
from agentdeck.web.auth import SecurityMiddleware

_STATUS: list[tuple[type[AgentdeckError], int]] = [
    (NotFound, 404),
    (InvalidState, 409),
    (Refused, 409),
    (ScenarioError, 422),
    (TemplateError, 422),
    (PolicyError, 422),
    (UsageError, 400),
    (PolicyDenied, 403),
    (AgentProcessError, 502),
    (ConfigError, 500),
]


def status_for(exc: AgentdeckError) -> int:
    return next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)


def error_body(status: int, message: str, **extra: object) -> dict[str, object]:
    return {"error": {"status": status, "message": message, **extra}}


def create_app(deck: Deck, *, token: str, settings: Settings) -> FastAPI:
    from agentdeck.web import (
        api,
        api_checkpoints,
        api_governance,
        api_memory,
        api_orchestration,
        api_worktrees,
        dashboard,
        sse,
    )

    app = FastAPI(title="agentdeck", version=__version__, docs_url=None, redoc_url=None)
    app.state.deck = deck
    app.state.settings = settings

    @app.exception_handler(AgentdeckError)
    async def agentdeck_error(_: Request, exc: AgentdeckError) -> JSONResponse:
        status = status_for(exc)
        return JSONResponse(
            error_body(status, exc.message, hint=exc.hint, type=type(exc).__name__),
            status_code=status,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {
                "field": ".".join(str(p) for p in err["loc"][1:]) or str(err["loc"][0]),
                "problem": err["msg"],
            }
            for err in exc.errors()
        ]
        first = problems[0] if problems else {"field": "?", "problem": "invalid"}
        message = f"invalid {first['field']}: {first['problem']}"
        return JSONResponse(error_body(422, message, problems=problems), status_code=422)

    @app.get("/healthz", tags=["meta"])
    async def healthz() -> dict[str, object]:
        return {"ok": True, "version": __version__}

    app.include_router(api.router)
    app.include_router(api_governance.router)
    app.include_router(api_memory.router)
    app.include_router(api_orchestration.router)
    app.include_router(api_worktrees.router)
    app.include_router(api_checkpoints.router)
    app.include_router(sse.router)
    app.include_router(dashboard.router)
    hosts = [settings.host, *settings.allowed_hosts]
    app.add_middleware(SecurityMiddleware, token=token, hosts=hosts)
    return app
