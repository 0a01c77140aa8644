"""Usage under /api/usage: cost and tokens over time, per project, agent
template or user, with the fleet's daily cap and the daily budgets.

The same figures as the Usage page and ``agentdeck usage``. Summed from the
event log's per-turn costs (``store.usage``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from agentdeck.core.usage import Bucket, UsageGroup, parse_since
from agentdeck.daemon.deck import Deck
from agentdeck.web.schemas import errors

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
    deck: Deck = request.app.state.deck
    found = await deck.usage(since_seconds=parse_since(since), bucket=bucket, by=by)
    return UsageOut.model_validate(found.to_dict())
