"""How well the deck is: the readiness record ``/readyz`` answers, and the pure rules
that judge each part (the event loop's lag, free disk) so they are testable alone.

A check is ``ok``, ``degraded`` (it works, worse than it should: a person should
look) or ``unhealthy`` (it does not work: a load balancer should send nothing, a
supervisor may restart it). The whole is its worst check.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# The event loop's lag (how late a 0.5 s sleep wakes), over the last minute: a p99
# past the first is felt by every request and stream; past the second nothing works.
# One freeze past the third (a blocking call) is worth a look, however rare.
LAG_DEGRADED_SECONDS = 0.25
LAG_UNHEALTHY_SECONDS = 2.0
LAG_FREEZE_SECONDS = 1.0
# Free disk under the deck's home (``agentdeck doctor``'s warn and fail).
DISK_DEGRADED_BYTES = 2 * 1024**3
DISK_UNHEALTHY_BYTES = 200 * 1024**2


class HealthStatus(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {HealthStatus.OK: 0, HealthStatus.DEGRADED: 1, HealthStatus.UNHEALTHY: 2}


def worst(statuses: Iterable[HealthStatus]) -> HealthStatus:
    return max(statuses, key=lambda s: s.rank, default=HealthStatus.OK)


@dataclass(frozen=True)
class HealthCheck:
    """One part of the deck, judged: ``detail`` says what was seen, in words."""

    name: str
    status: HealthStatus
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": str(self.status), "detail": self.detail}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HealthCheck:
        return cls(str(data["name"]), HealthStatus(data["status"]), str(data["detail"]))


@dataclass(frozen=True)
class LoopLag:
    """The event loop's lag over the last minute, in seconds (``samples`` taken)."""

    samples: int
    last: float
    p99: float
    max: float

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "last": self.last, "p99": self.p99, "max": self.max}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopLag:
        return cls(
            int(data["samples"]), float(data["last"]), float(data["p99"]), float(data["max"])
        )


@dataclass(frozen=True)
class Readiness:
    """The deck's readiness: its worst check's status, every check, the loop's lag."""

    status: HealthStatus
    checks: tuple[HealthCheck, ...] = ()
    lag: LoopLag | None = field(default=None)

    @classmethod
    def of(cls, checks: Sequence[HealthCheck], lag: LoopLag | None = None) -> Readiness:
        return cls(worst(c.status for c in checks), tuple(checks), lag)

    @property
    def reasons(self) -> list[str]:
        """What is not ok, one line each (``loop: lag p99 0.61 s``)."""
        return [f"{c.name}: {c.detail}" for c in self.checks if c.status is not HealthStatus.OK]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": str(self.status),
            "reasons": self.reasons,
            "checks": [c.to_dict() for c in self.checks],
            "lag": self.lag.to_dict() if self.lag is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Readiness:
        lag = data.get("lag")
        return cls(
            HealthStatus(data["status"]),
            tuple(HealthCheck.from_dict(c) for c in data.get("checks") or ()),
            LoopLag.from_dict(lag) if isinstance(lag, dict) else None,
        )


def lag_of(samples: Sequence[float], expected: int = 0) -> LoopLag:
    """The lag's summary over ``samples`` (oldest first): the last, p99 (nearest
    rank) and max; zeros for none. ``expected``: how many samples a full window
    holds; until it is full the missing ones count as on time, so one hiccup just
    after start-up is not the p99 of the two samples taken so far."""
    if not samples:
        return LoopLag(0, 0.0, 0.0, 0.0)
    ordered = sorted(samples)
    missing = max(0, expected - len(ordered))
    rank = max(1, math.ceil(0.99 * (len(ordered) + missing))) - missing
    p99 = ordered[rank - 1] if rank >= 1 else 0.0
    return LoopLag(len(samples), samples[-1], p99, ordered[-1])


def judge_lag(lag: LoopLag | None) -> HealthCheck:
    if lag is None:
        return HealthCheck("loop", HealthStatus.OK, "not watched (no daemon in this process)")
    said = f"lag p99 {lag.p99:.2f} s, max {lag.max:.2f} s over the last minute"
    if lag.p99 >= LAG_UNHEALTHY_SECONDS:
        return HealthCheck("loop", HealthStatus.UNHEALTHY, said)
    if lag.p99 >= LAG_DEGRADED_SECONDS or lag.max >= LAG_FREEZE_SECONDS:
        return HealthCheck("loop", HealthStatus.DEGRADED, said)
    return HealthCheck("loop", HealthStatus.OK, said)


def judge_disk(free_bytes: int, where: str) -> HealthCheck:
    said = f"{free_bytes / 1024**3:.1f} GiB free under {where}"
    if free_bytes < DISK_UNHEALTHY_BYTES:
        return HealthCheck("disk", HealthStatus.UNHEALTHY, said)
    if free_bytes < DISK_DEGRADED_BYTES:
        return HealthCheck("disk", HealthStatus.DEGRADED, said)
    return HealthCheck("disk", HealthStatus.OK, said)
