"""Cost and usage over time: who an agent counts for, budgets, the query's terms.

Pure: no I/O, no clock. The store aggregates (``store.usage``); the runner
enforces the budgets with ``core.guardrails.FleetBudget`` objects scoped to a
user or a project; clients render ``UsageReport``.

An agent counts for
- its user: ``AgentSpec.owner`` (the API's authenticated user; ``local`` for
  the embedded CLI), ``admin`` when it has none (before users existed);
- its project: ``AgentSpec.project``, else the directory it was asked to work
  in, else the one it got;
- its template: ``AgentSpec.template`` (none for a plain ``agentdeck run``).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agentdeck.errors import UsageError

if TYPE_CHECKING:
    from agentdeck.core.agent import Agent

DEFAULT_OWNER = "admin"  # agents started before users existed, or by the legacy token
LOCAL_OWNER = "local"  # agents of the embedded CLI (``agentdeck run`` without a daemon)
MAX_SINCE_SECONDS = 366 * 86_400


class BudgetScope(StrEnum):
    USER = "user"
    PROJECT = "project"


class UsageGroup(StrEnum):
    NONE = "none"
    PROJECT = "project"
    TEMPLATE = "template"
    USER = "user"


class Bucket(StrEnum):
    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        return 3600 if self is Bucket.HOUR else 86_400


def owner_of(agent: Agent) -> str:
    return agent.spec.owner or DEFAULT_OWNER


def project_of(agent: Agent) -> str:
    return agent.spec.project or agent.spec.cwd or agent.cwd


def template_of(agent: Agent) -> str | None:
    return agent.spec.template


_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


def parse_since(text: str) -> float:
    """``30m``, ``24h``, ``7d``, ``2w`` → seconds; anything else is a ``UsageError``."""
    m = _SINCE.match(text)
    if m is None:
        raise UsageError(
            f"cannot read the period {text!r}", hint="a number and a unit: 30m, 24h, 7d or 2w"
        )
    seconds = float(m.group(1)) * _UNIT[m.group(2)]
    if not 0 < seconds <= MAX_SINCE_SECONDS:
        raise UsageError(f"the period {text!r} must be more than 0 and at most 366 days")
    return seconds


def bucket_start(ts: float, bucket: Bucket) -> float:
    """The start of ``ts``'s hour or UTC day (the store buckets the same way)."""
    return float(math.floor(ts / bucket.seconds) * bucket.seconds)


def check_budget(scope: str, name: str, daily_usd: float) -> tuple[BudgetScope, str, float]:
    """A budget as given; bad ones are a ``UsageError`` naming what is wrong."""
    try:
        kind = BudgetScope(scope)
    except ValueError:
        raise UsageError(f"unknown budget scope {scope!r}", hint="user or project") from None
    name = name.strip()
    if not name:
        raise UsageError(f"a {kind} budget needs the {kind}'s name")
    if isinstance(daily_usd, bool) or not math.isfinite(daily_usd) or daily_usd < 0:
        raise UsageError(f"a daily budget is a finite amount of USD >= 0, not {daily_usd!r}")
    return kind, name, float(daily_usd)


@dataclass(frozen=True)
class Budget:
    """A daily USD budget of one user or one project, and today's spend."""

    scope: str
    name: str
    daily_usd: float
    spent_today_usd: float = 0.0

    @property
    def fraction(self) -> float:
        return self.spent_today_usd / self.daily_usd if self.daily_usd > 0 else math.inf


@dataclass(frozen=True)
class UsageFigures:
    """Cost and tokens summed over some results (``results``: how many turns ended)."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    results: int = 0

    def plus(self, other: UsageFigures) -> UsageFigures:
        return UsageFigures(
            self.cost_usd + other.cost_usd,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.results + other.results,
        )


@dataclass(frozen=True)
class UsagePoint:
    """One bucket of one group: ``start`` the bucket's start (epoch seconds)."""

    start: float
    key: str
    figures: UsageFigures


@dataclass(frozen=True)
class UsageReport:
    since: float
    until: float
    bucket: Bucket
    by: UsageGroup
    points: list[UsagePoint]
    daily_cap_usd: float | None = None
    budgets: list[Budget] = field(default_factory=list)

    @property
    def total(self) -> UsageFigures:
        out = UsageFigures()
        for p in self.points:
            out = out.plus(p.figures)
        return out

    def groups(self) -> list[tuple[str, UsageFigures]]:
        """Each group's totals, the costliest first."""
        sums: dict[str, UsageFigures] = {}
        for p in self.points:
            sums[p.key] = sums.get(p.key, UsageFigures()).plus(p.figures)
        return sorted(sums.items(), key=lambda kv: (-kv[1].cost_usd, kv[0]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "bucket": str(self.bucket),
            "by": str(self.by),
            "total": asdict(self.total),
            "groups": [{"key": k, **asdict(f)} for k, f in self.groups()],
            "series": [{"start": p.start, "key": p.key, **asdict(p.figures)} for p in self.points],
            "daily_cap_usd": self.daily_cap_usd,
            "budgets": [asdict(b) for b in self.budgets],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UsageReport:
        def figures(d: dict[str, Any]) -> UsageFigures:
            return UsageFigures(
                float(d["cost_usd"]),
                int(d["input_tokens"]),
                int(d["output_tokens"]),
                int(d["results"]),
            )

        return cls(
            since=float(data["since"]),
            until=float(data["until"]),
            bucket=Bucket(data["bucket"]),
            by=UsageGroup(data["by"]),
            points=[
                UsagePoint(float(p["start"]), str(p["key"]), figures(p)) for p in data["series"]
            ],
            daily_cap_usd=data.get("daily_cap_usd"),
            budgets=[Budget(**b) for b in data.get("budgets", [])],
        )
