"""The Usage page: cost and tokens over time (hours or days), per project, agent
template or user, the fleet's daily cap drawn on the cost chart, the budgets and
today's budget warnings. Charts are SVG built here (``web.charts``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from agentdeck.core.guardrails import WARN_FRACTION, day_start
from agentdeck.core.usage import Bucket, UsageGroup, UsageReport, parse_since
from agentdeck.errors import UsageError
from agentdeck.web import charts
from agentdeck.web.pages_base import deck_of, render

router = APIRouter(include_in_schema=False)

PERIODS = ("24h", "7d", "30d", "90d")


@dataclass(frozen=True)
class Choice:
    since: str = "7d"
    bucket: Bucket = Bucket.DAY
    by: UsageGroup = UsageGroup.PROJECT


def choice_of(request: Request) -> tuple[Choice, str | None]:
    """The query's choices; a bad one is named and the default used instead."""
    q = request.query_params
    since = q.get("since") or Choice.since
    try:
        parse_since(since)
        bucket = Bucket(q.get("bucket") or Choice.bucket)
        by = UsageGroup(q.get("by") or Choice.by)
    except (UsageError, ValueError) as exc:
        message = exc.message if isinstance(exc, UsageError) else str(exc)
        return Choice(), message
    return Choice(since, bucket, by), None


def charts_of(found: UsageReport) -> dict[str, object]:
    """The cost and token charts and their legend."""
    order = [key for key, _ in found.groups()]
    starts = charts.bucket_starts(found.since, found.until, found.bucket.seconds)
    hourly = found.bucket is Bucket.HOUR
    cost = charts.series(
        starts, [(p.start, p.key, p.figures.cost_usd) for p in found.points], order
    )
    tokens = charts.series(
        starts,
        [(p.start, p.key, p.figures.input_tokens + p.figures.output_tokens) for p in found.points],
        order,
    )
    # The cap is per UTC day: drawn on a chart of days (an hour's bar cannot cross it).
    cap = found.daily_cap_usd if not hourly else None
    per = "hour" if hourly else "day"
    return {
        "cost_svg": charts.bar_chart(
            cost,
            title=f"Cost per {per} (USD)",
            hourly=hourly,
            fmt=charts.usd,
            limit=cap,
            limit_label="daily fleet cap",
        ),
        "tokens_svg": charts.bar_chart(
            tokens, title=f"Tokens per {per}", hourly=hourly, fmt=charts.count
        ),
        "legend": list(charts.colors(list(cost.values)).items()),
    }


@router.get("/usage", response_class=HTMLResponse)
async def usage_page(request: Request) -> HTMLResponse:
    deck = deck_of(request)
    choice, problem = choice_of(request)
    found = await deck.usage(
        since_seconds=parse_since(choice.since), bucket=choice.bucket, by=choice.by
    )
    warnings = await deck.budget_warnings(day_start(time.time()))
    return render(
        "usage.html",
        status_code=400 if problem else 200,
        nav="usage",
        choice=choice,
        problem=problem,
        periods=PERIODS,
        groups=[g for g in UsageGroup],
        buckets=[b for b in Bucket],
        report=found,
        total=found.total,
        rows=found.groups(),
        warn_fraction=WARN_FRACTION,
        warnings=warnings,
        **charts_of(found),
    )
