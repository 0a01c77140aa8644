"""Usage under /api/usage: cost and tokens over time, per project, agent
template or user, with the fleet's daily cap and the daily budgets; the budgets
themselves under /api/budgets (set and removed by an admin).

The same figures as the Usage page and ``agentdeck usage``. Summed from the
event log's per-turn costs (``store.usage``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from agentdeck.core.knowledge import budget_to_dict
from agentdeck.core.usage import Bucket, BudgetScope, UsageGroup, parse_since
from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import Body, errors

router = APIRouter(
    prefix="/api",
    tags=["usage"],
    responses=errors(400, e400="A period that cannot be read (e.g. since=7x)"),
)


class FiguresOut(BaseModel):
    cost_usd: float = Field(description="USD spent (what the turns cost).")
    input_tokens: int = Field(description="Input tokens, cache reads and writes included.")
    output_tokens: int
    results: int = Field(description="How many results (turns that ended) these figures sum.")


class GroupOut(FiguresOut):
    key: str = Field(description="The user, project or template; `all` with by=none.")


class PointOut(GroupOut):
    start: float = Field(description="The bucket's start (epoch seconds, UTC hours or days).")


class BudgetOut(BaseModel):
    scope: str = Field(description="user or project")
    name: str
    daily_usd: float
    spent_today_usd: float = Field(description="Spent since 00:00 UTC.")


class UsageOut(BaseModel):
    since: float = Field(description="Start of the first bucket (epoch seconds).")
    until: float
    bucket: Bucket
    by: UsageGroup
    total: FiguresOut
    groups: list[GroupOut] = Field(description="Each group's totals, the costliest first.")
    series: list[PointOut] = Field(description="Per bucket and group; empty buckets left out.")
    daily_cap_usd: float | None = Field(description="The fleet's daily cap (default profile).")
    budgets: list[BudgetOut]


def _deck(request: Request) -> Deck:
    deck: Deck = request.app.state.deck
    return deck


@router.get("/usage", response_model=UsageOut, summary="Cost and tokens over time")
async def usage(
    request: Request,
    by: Annotated[UsageGroup, Query(description="Group by project, template or user.")] = (
        UsageGroup.NONE
    ),
    since: Annotated[
        str, Query(max_length=16, description="How far back: 30m, 24h, 7d, 2w (at most 366d).")
    ] = "7d",
    bucket: Annotated[Bucket, Query(description="hour or day (UTC).")] = Bucket.DAY,
) -> UsageOut:
    found = await _deck(request).usage(since_seconds=parse_since(since), bucket=bucket, by=by)
    return UsageOut.model_validate(found.to_dict())


# -- budgets --------------------------------------------------------------------------


class BudgetIn(Body):
    scope: Literal["user", "project"] = Field(description="user or project")
    name: str = Field(
        min_length=1, max_length=4096, description="The user, or the project's directory."
    )
    daily_usd: float = Field(description="USD a day (UTC), finite, >= 0; 0 stops every new agent.")


class BudgetList(BaseModel):
    budgets: list[BudgetOut]


@router.get("/budgets", response_model=BudgetList, summary="The daily budgets, with today's spend")
async def list_budgets(request: Request) -> dict[str, Any]:
    found = await _deck(request).budgets()
    return {"budgets": [budget_to_dict(b) for b in found]}


@router.put("/budgets", response_model=BudgetOut, summary="Set a user's or a project's budget")
async def set_budget(request: Request, body: BudgetIn) -> dict[str, Any]:
    budget = await _deck(request).set_budget(BudgetScope(body.scope), body.name, body.daily_usd)
    return budget_to_dict(budget)


@router.delete("/budgets", status_code=204, responses=errors(404), summary="Remove a daily budget")
async def remove_budget(
    request: Request,
    scope: Annotated[BudgetScope, Query(description="user or project")],
    name: Annotated[str, Query(min_length=1, max_length=4096)],
) -> None:
    await _deck(request).remove_budget(scope, name)
