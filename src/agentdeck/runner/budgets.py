"""The daily budgets an agent spends from: the fleet's cap (``daily_usd`` of its
policy profile) and those of its user and its project (``agentdeck budgets``).

Each is one ``FleetBudget`` shared by every agent under it in this process,
seeded with today's spend from the log (every process's agents) when first
needed; a budget whose amount changes gets a new one, seeded afresh. The 80 %
warning is recorded once per budget per UTC day: a restarted process finds
today's warning in the log and does not repeat it.
"""

from __future__ import annotations

import time

from agentdeck.core.agent import Agent
from agentdeck.core.events import BudgetWarning
from agentdeck.core.guardrails import WARN_FRACTION, FleetBudget, day_start
from agentdeck.core.usage import BudgetScope, owner_of, project_of
from agentdeck.store.store import Store
from agentdeck.store.usage import UsageStore


class DailyBudgets:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.usage = UsageStore(store)
        self._fleets: dict[float, FleetBudget] = {}
        self._scoped: dict[tuple[str, str, float], FleetBudget] = {}

    async def fleet(self, daily_usd: float | None) -> FleetBudget | None:
        """The fleet-wide daily cap, shared by every agent under it; today's spend
        so far (from the log, every process's agents) is its starting point."""
        if daily_usd is None:
            return None
        fleet = self._fleets.get(daily_usd)
        if fleet is None:  # it rolls over to a new day by itself
            now = time.time()
            spent = await self.store.spend_since(day_start(now))
            warned = await self.usage.warned(day_start(now), "fleet", "")
            fleet = FleetBudget(daily_usd, spent_today=spent, now=now, warned_today=warned)
            self._fleets[daily_usd] = fleet
        return fleet

    async def scoped(self, agent: Agent) -> tuple[FleetBudget, ...]:
        """The daily budgets of the agent's user and project, those that are set."""
        out: list[FleetBudget] = []
        for scope, name in (
            (BudgetScope.USER, owner_of(agent)),
            (BudgetScope.PROJECT, project_of(agent)),
        ):
            amount = await self.usage.budget(scope, name)
            if amount is None:
                continue
            key = (str(scope), name, amount)
            budget = self._scoped.get(key)
            if budget is None:
                now = time.time()
                today = day_start(now)
                spent = await self.usage.spent(since=today, scope=scope, name=name)
                warned = await self.usage.warned(today, str(scope), name)
                budget = FleetBudget(
                    amount,
                    spent_today=spent,
                    now=now,
                    scope=str(scope),
                    name=name,
                    warned_today=warned,
                )
                self._scoped[key] = budget
            out.append(budget)
        return tuple(out)


def warnings_due(budgets: tuple[FleetBudget, ...], agent_id: str, ts: float) -> list[BudgetWarning]:
    """The warning events of the budgets that reached ``WARN_FRACTION`` today."""
    return [
        BudgetWarning(
            agent_id=agent_id,
            ts=ts,
            scope=b.scope,
            name=b.name,
            daily_usd=b.daily_usd,
            spent_usd=round(b.spent, 6),
            day=b.day.isoformat(),
            message=f"{b.label} is {round(100 * b.spent / b.daily_usd) if b.daily_usd else 100} % "
            f"spent: ${b.spent:.2f} of ${b.daily_usd:.2f} today "
            f"(warned at {round(100 * WARN_FRACTION)} %)",
        )
        for b in budgets
        if b.warning_due(ts)
    ]
