"""Orchestration under /api: agent templates, workers' questions, and the deck's
tools for an agent that orchestrates from outside (``agentdeck mcp --orchestrate``)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field, model_validator

from agentdeck.core.asks import AskState, structured_answer
from agentdeck.daemon.deck import Deck
from agentdeck.web.auth import channel_of
from agentdeck.web.schemas import AgentOut, Body, errors

router = APIRouter(prefix="/api", tags=["orchestration"], responses=errors(400, 404, 409))

# One blocking deck call over HTTP (wait_for_agents) answers within this, with a
# "still waiting" result the caller repeats: well inside the idle timeout Claude
# Code gives a stdio MCP server (30 minutes) and any proxy's.
HTTP_WAIT_CAP_SECONDS = 300.0
DISCONNECT_POLL_SECONDS = 0.5


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


Picked = str | int


class AnswerIn(Body):
    answer: str | None = Field(
        default=None,
        min_length=1,
        max_length=20_000,
        description="The answer; the worker goes on with it. For a multiple choice: an "
        "option's number or label, or other text; several questions: `1=Label;2=Other text`.",
    )
    answers: dict[str, Picked | list[Picked]] | None = Field(
        default=None,
        max_length=16,
        description="A multiple choice's answers, instead of `answer`: each question (its "
        "number from 1, its text or its header) to an option's label or number, a list of "
        "them where it takes several, or other text.",
    )

    @model_validator(mode="after")
    def _one(self) -> AnswerIn:
        if (self.answer is None) == (self.answers is None):
            raise ValueError("give either answer or answers")
        return self


class ExternalIn(Body):
    session_id: str = Field(min_length=1, description="Claude Code's session id.")
    project: str = Field(default="", description="The session's project directory.")
    pid: int | None = Field(default=None, description="The Claude Code process.")


class ToolOut(BaseModel):
    text: str
    is_error: bool = False


# -- templates ------------------------------------------------------------------------


@router.get("/templates", summary="Agent templates visible from a project")
async def list_templates(
    request: Request,
    project: Annotated[str | None, Query(description="The project directory.")] = None,
) -> dict[str, Any]:
    return (await _deck(request).templates(project)).to_dict()


@router.get("/templates/{name}", summary="One agent template")
async def get_template(
    request: Request,
    name: str,
    project: Annotated[str | None, Query(description="The project directory.")] = None,
) -> dict[str, Any]:
    return (await _deck(request).template(name, project)).to_dict()


# -- questions ------------------------------------------------------------------------


@router.get("/asks", summary="Workers' questions (pending by default)")
async def list_asks(
    request: Request,
    state: list[AskState] = Query(default=[AskState.PENDING]),  # noqa: B008
    agent: Annotated[str | None, Query(description="Asked by this agent.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    deck = _deck(request)
    agent_id = (await deck.get_agent(agent)).id if agent else None
    found = await deck.asks(states=state or None, agent_id=agent_id, limit=limit)
    return {"asks": [a.to_public() for a in found]}


@router.get("/asks/{ref}", summary="One question")
async def get_ask(request: Request, ref: str) -> dict[str, Any]:
    return (await _deck(request).ask(ref)).to_public()


@router.post("/asks/{ref}", summary="Answer a worker's question")
async def answer_ask(request: Request, ref: str, body: AnswerIn) -> dict[str, Any]:
    deck = _deck(request)
    text = body.answer
    if body.answers is not None:
        text = structured_answer(await deck.ask(ref), body.answers)
    answered = await deck.answer_ask(ref, text or "", by=channel_of(request))
    return answered.to_public()


# -- orchestrating from outside ---------------------------------------------------------


@router.post(
    "/agents/external",
    response_model=AgentOut,
    summary="The agent of a hand-started Claude Code session (made if new), to orchestrate as",
)
async def external_agent(request: Request, body: ExternalIn) -> AgentOut:
    deck = _deck(request)
    agent = await deck.external_agent(body.session_id, body.project, body.pid)
    return AgentOut.of(agent)


@router.post(
    "/agents/{ref}/deck/{tool}",
    response_model=ToolOut,
    summary="Call one of the deck's orchestrator tools as this agent",
)
async def deck_tool(
    request: Request,
    ref: Annotated[str, Path(description="The agent to act as.")],
    tool: Annotated[str, Path(description="spawn_agent, list_agents, wait_for_agents, …")],
    args: dict[str, Any],
) -> ToolOut:
    deck = _deck(request)
    call = asyncio.ensure_future(
        deck.call_deck_tool(ref, tool, args, wait_cap=HTTP_WAIT_CAP_SECONDS)
    )
    # A caller that went away (Esc in Claude Code) must not have a wait's questions
    # and notes used up for a result nobody reads: the call is cancelled.
    while not call.done():
        await asyncio.wait({call}, timeout=DISCONNECT_POLL_SECONDS)
        if not call.done() and await request.is_disconnected():
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
            return ToolOut(text="the caller went away", is_error=True)
    text, is_error = call.result()
    return ToolOut(text=text, is_error=is_error)
