"""Cost and usage over time, and the daily budgets (migration 0008).

Usage comes from the event log: each ``CostUpdated`` carries what its turn
cost (``delta_usd``) and its tokens, at its time. The writer adds them up per
agent and UTC hour as it appends them (``usage_rollup``, ``usage_hours``); one
aggregate query sums those rows per time bucket and per group (the agent's
user, project or template, plain columns of ``agents``). Hours are the finest
grain: a period starts on the hour. Events written before ``delta_usd`` existed
count no cost here (``Store.spend_since`` differences them for the fleet cap).

Budgets are rows of ``budgets``; writes go through the store's one write path.
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from agentdeck.core.event_types import EventType
from agentdeck.core.guardrails import day_start
from agentdeck.core.usage import (
    Bucket,
    Budget,
    BudgetScope,
    UsageFigures,
    UsageGroup,
    UsagePoint,
    UsageReport,
    bucket_start,
    check_budget,
)
from agentdeck.errors import NotFound
from agentdeck.store.dialect import time_bucket
from agentdeck.store.schema import agents, budgets, events, usage_hours
from agentdeck.store.store import Store

_WARNING = str(EventType.BUDGET_WARNING)
_GROUP_COLUMN = {
    UsageGroup.USER: agents.c.owner,
    UsageGroup.PROJECT: agents.c.project,
    UsageGroup.TEMPLATE: agents.c.template,
}
_SCOPE_COLUMN = {BudgetScope.USER: agents.c.owner, BudgetScope.PROJECT: agents.c.project}
NO_TEMPLATE = "(none)"  # the group of agents without a template


def usage_points(
    conn: Connection, *, since: float, until: float, bucket: Bucket, by: UsageGroup
) -> list[UsagePoint]:
    """Cost, tokens and results per bucket (and group), oldest bucket first; the
    hours that start in ``[since, until)`` count."""
    u = usage_hours.c
    start = time_bucket(u.hour, bucket.seconds).label("start")
    key = _GROUP_COLUMN[by] if by is not UsageGroup.NONE else sa.literal("all")
    stmt = (
        sa.select(
            start,
            key.label("key"),
            sa.func.sum(u.cost_usd),
            sa.func.sum(u.input_tokens),
            sa.func.sum(u.output_tokens),
            sa.func.sum(u.results),
        )
        .select_from(usage_hours.join(agents, agents.c.id == u.agent_id))
        .where(u.hour >= since, u.hour < until)
        .group_by(start, key)
        .order_by(start, key)
    )
    return [
        UsagePoint(
            float(row[0]),
            NO_TEMPLATE if row[1] is None else str(row[1]),
            UsageFigures(float(row[2] or 0.0), int(row[3] or 0), int(row[4] or 0), int(row[5])),
        )
        for row in conn.execute(stmt)
    ]


def spent(conn: Connection, *, since: float, scope: BudgetScope, name: str) -> float:
    """USD spent in the hours from ``since`` by the agents of one user or one project."""
    u = usage_hours.c
    stmt = (
        sa.select(sa.func.sum(u.cost_usd))
        .select_from(usage_hours.join(agents, agents.c.id == u.agent_id))
        .where(u.hour >= since, _SCOPE_COLUMN[scope] == name)
    )
    return float(conn.execute(stmt).scalar() or 0.0)


def spent_by(conn: Connection, *, since: float, scope: BudgetScope) -> dict[str, float]:
    column, u = _SCOPE_COLUMN[scope], usage_hours.c
    stmt = (
        sa.select(column, sa.func.sum(u.cost_usd))
        .select_from(usage_hours.join(agents, agents.c.id == u.agent_id))
        .where(u.hour >= since)
        .group_by(column)
    )
    return {str(k): float(v or 0.0) for k, v in conn.execute(stmt)}


def warnings_since(conn: Connection, since: float, limit: int = 100) -> list[dict[str, Any]]:
    """The budget warnings recorded since ``since``, newest first."""
    stmt = (
        sa.select(events.c.agent_id, events.c.ts, events.c.data)
        .where(events.c.type == _WARNING, events.c.ts >= since)
        .order_by(events.c.id.desc())
        .limit(limit)
    )
    return [{"agent_id": a, "ts": ts, **data} for a, ts, data in conn.execute(stmt)]


class UsageStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def points(
        self, *, since: float, until: float, bucket: Bucket, by: UsageGroup
    ) -> list[UsagePoint]:
        return await self.store._read(
            lambda c: usage_points(c, since=since, until=until, bucket=bucket, by=by)
        )

    async def spent(self, *, since: float, scope: BudgetScope, name: str) -> float:
        return await self.store._read(lambda c: spent(c, since=since, scope=scope, name=name))

    async def warnings(self, since: float, limit: int = 100) -> list[dict[str, Any]]:
        return await self.store._read(lambda c: warnings_since(c, since, limit))

    async def warned(self, since: float, scope: str, name: str) -> bool:
        return any(
            w.get("scope") == scope and w.get("name") == name
            for w in await self.warnings(since, limit=10_000)
        )

    # --- budgets -----------------------------------------------------------------

    async def budget(self, scope: BudgetScope, name: str) -> float | None:
        def query(conn: Connection) -> float | None:
            row = conn.execute(
                sa.select(budgets.c.daily_usd).where(
                    budgets.c.scope == str(scope), budgets.c.name == name
                )
            ).first()
            return None if row is None else float(row[0])

        return await self.store._read(query)

    async def budgets(self, *, today: float | None = None) -> list[Budget]:
        """Every budget, with what its user or project spent since ``today``."""

        def query(conn: Connection) -> list[Budget]:
            rows = conn.execute(sa.select(budgets).order_by(budgets.c.scope, budgets.c.name)).all()
            spend: dict[str, dict[str, float]] = {}
            if today is not None:
                for scope in BudgetScope:
                    spend[scope] = spent_by(conn, since=today, scope=scope)
            return [
                Budget(r.scope, r.name, float(r.daily_usd), spend.get(r.scope, {}).get(r.name, 0.0))
                for r in rows
            ]

        return await self.store._read(query)

    async def set_budget(self, scope: str, name: str, daily_usd: float) -> Budget:
        kind, name, amount = check_budget(scope, name, daily_usd)
        row = {"scope": str(kind), "name": name, "daily_usd": amount, "updated_at": time.time()}

        def op(conn: Connection) -> None:
            where = (budgets.c.scope == row["scope"], budgets.c.name == name)
            if conn.execute(sa.update(budgets).where(*where).values(row)).rowcount == 0:
                conn.execute(sa.insert(budgets).values(row))

        await self.store._write(op)
        return Budget(str(kind), name, amount)

    async def remove_budget(self, scope: str, name: str) -> None:
        kind, name, _ = check_budget(scope, name, 0.0)

        def op(conn: Connection) -> int:
            return int(
                conn.execute(
                    sa.delete(budgets).where(budgets.c.scope == str(kind), budgets.c.name == name)
                ).rowcount
            )

        if not await self.store._write(op):
            raise NotFound(f"{kind} budget", name, hint="`agentdeck budgets ls` lists the budgets")


async def report(
    usage: UsageStore,
    *,
    since_seconds: float,
    bucket: Bucket,
    by: UsageGroup,
    daily_cap_usd: float | None,
    now: float,
) -> UsageReport:
    """The usage of the last ``since_seconds`` (from the start of that bucket),
    with the fleet's cap and every budget with today's spend."""
    since = bucket_start(now - since_seconds, bucket)
    points = await usage.points(since=since, until=now + 1, bucket=bucket, by=by)
    budgets = await usage.budgets(today=day_start(now))
    return UsageReport(since, now, bucket, by, points, daily_cap_usd, budgets)
