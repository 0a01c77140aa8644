"""Schedules under /api: add, list, show, pause, resume, run by hand, remove (the
Deck's ``daemon.deck.schedules``; ``core.schedules``).

The body is strict (unknown fields refused, each value its own type, bounded); what
a value means (a cron expression, a time zone, an overlap rule) the Deck checks, so
a bad one is the same ``UsageError`` here as in-process. A schedule's agents are the
request's user's; for anyone but the deck's owner its scenario is held to what
``POST /api/agents`` allows (a built-in, or a file in the project's ``.agentdeck/``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import Field

from agentdeck.core.agent import AgentSpec
from agentdeck.daemon.deck import Deck
from agentdeck.web.api import _confined, _deck_owner
from agentdeck.web.owners import request_user
from agentdeck.web.schemas import Body, errors

router = APIRouter(prefix="/api", tags=["schedules"], responses=errors(400, 404, 409))

NameParam = Annotated[str, Path(max_length=200, description="The schedule's name.")]


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


class ScheduleIn(Body):
    name: str = Field(min_length=1, max_length=200)
    cron: str = Field(min_length=1, max_length=200, description="Five fields, e.g. 0 9 * * 1-5.")
    prompt: str = Field(min_length=1, max_length=10_000)
    template: str | None = Field(default=None, min_length=1, max_length=200)
    scenario: str | None = Field(default=None, min_length=1, max_length=1000)
    project: str | None = Field(default=None, min_length=1, max_length=4096)
    cwd: str | None = Field(default=None, min_length=1, max_length=4096)
    worktree: bool = False
    budget_usd: float | None = Field(default=None, description="Its runs' daily budget (USD).")
    overlap: str = Field(default="skip", max_length=20, description="skip, queue or allow.")
    tz: str = Field(default="UTC", max_length=100, description="An IANA time zone.")
    catch_up: str = Field(default="skip", max_length=20, description="skip or once.")


@router.get("/schedules", summary="Every schedule, by name")
async def list_schedules(request: Request) -> dict[str, Any]:
    return {"schedules": [s.to_dict() for s in await _deck(request).schedules()]}


@router.post("/schedules", status_code=201, summary="Add a schedule")
async def add_schedule(request: Request, body: ScheduleIn) -> dict[str, Any]:
    deck = _deck(request)
    scenario = body.scenario
    if scenario is not None and not _deck_owner(request, deck):
        spec = AgentSpec(prompt=body.prompt, project=body.project, cwd=body.cwd, scenario=scenario)
        scenario = _confined(spec).scenario
    made = await deck.add_schedule(
        body.name,
        body.cron,
        prompt=body.prompt,
        template=body.template,
        scenario=scenario,
        project=body.project,
        cwd=body.cwd,
        worktree=body.worktree,
        budget_usd=body.budget_usd,
        overlap=body.overlap,
        tz=body.tz,
        catch_up=body.catch_up,
        by=request_user(request),
    )
    return made.to_dict()


@router.get("/schedules/{name}", summary="A schedule, its next due times and its runs")
async def get_schedule(request: Request, name: NameParam) -> dict[str, Any]:
    return (await _deck(request).schedule(name)).to_dict()


@router.post("/schedules/{name}/pause", summary="Pause a schedule")
async def pause_schedule(request: Request, name: NameParam) -> dict[str, Any]:
    return (await _deck(request).pause_schedule(name)).to_dict()


@router.post("/schedules/{name}/resume", summary="Resume a schedule")
async def resume_schedule(request: Request, name: NameParam) -> dict[str, Any]:
    return (await _deck(request).resume_schedule(name)).to_dict()


@router.post("/schedules/{name}/run", summary="One run of a schedule now")
async def run_schedule(request: Request, name: NameParam) -> dict[str, Any]:
    return (await _deck(request).run_schedule(name)).to_dict()


@router.delete("/schedules/{name}", summary="Remove a schedule and its history")
async def remove_schedule(request: Request, name: NameParam) -> dict[str, Any]:
    await _deck(request).remove_schedule(name)
    return {"removed": name}
