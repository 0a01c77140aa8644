"""Schedules (issue 33, item 1): a named schedule starts an agent (of a template, or on
a scripted-model scenario) each time its cron expression comes due. Pure: the records,
the checks of what a person types (clear ``UsageError``\\ s), the next due time from a
clock's time (croniter, in the schedule's time zone), and the three decisions a due
run goes through — overlap, catch-up, the schedule's daily budget. The rows are
``store.schedules``'; the scheduler that wakes at the next due time is
``daemon.scheduler``'s.

* ``overlap``: what a due run does while the previous run's agent still runs —
  ``skip`` (recorded as skipped), ``queue`` (started when that agent ends; at most one
  waits: a further one is skipped), ``allow`` (started anyway).
* ``catch_up``: what runs missed while the daemon was down come to at its next start —
  ``skip`` (recorded as missed, none run) or ``once`` (one run for all of them).
* ``budget_usd``: the cost of the schedule's agents started today (the schedule's
  time zone) past which a due run is refused (recorded with the reason).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from agentdeck.errors import UsageError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
TZ_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$")
CRON_RE = re.compile(r"^[0-9A-Za-z*/,\- ]{1,100}$")
MAX_PROMPT_CHARS = 8000
MAX_MISSED_COUNTED = 10_000  # past this many missed runs, "at least" is said
MAX_BUDGET_USD = 1_000_000.0


class Overlap(StrEnum):
    SKIP = "skip"
    QUEUE = "queue"
    ALLOW = "allow"


class CatchUp(StrEnum):
    SKIP = "skip"
    ONCE = "once"


class RunOutcome(StrEnum):
    STARTED = "started"  # an agent started (``agent_id``)
    QUEUED = "queued"  # waiting for the previous run's agent to end (overlap=queue)
    SKIPPED = "skipped"  # the previous run's agent still ran (overlap=skip)
    REFUSED = "refused"  # past the schedule's daily budget
    FAILED = "failed"  # the agent could not start (the reason says why)
    MISSED = "missed"  # due while the daemon was down (catch_up=skip)


class Decision(StrEnum):
    START = "start"
    QUEUE = "queue"
    SKIP = "skip"


@dataclass(frozen=True)
class Schedule:
    name: str
    cron: str
    prompt: str  # scrubbed before it is stored
    project: str  # where the template is found, and the agents' project
    created_at: float
    created_by: str  # the user who added it: its agents' owner
    next_at: float  # the next due time (epoch seconds)
    tz: str = "UTC"
    template: str | None = None
    scenario: str | None = None
    cwd: str | None = None
    worktree: bool = False
    budget_usd: float | None = None
    overlap: Overlap = Overlap.SKIP
    catch_up: CatchUp = CatchUp.SKIP
    paused: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["overlap"] = str(self.overlap)
        data["catch_up"] = str(self.catch_up)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schedule:
        found = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        found["overlap"] = Overlap(found.get("overlap") or Overlap.SKIP)
        found["catch_up"] = CatchUp(found.get("catch_up") or CatchUp.SKIP)
        found["worktree"] = bool(found.get("worktree"))
        found["paused"] = bool(found.get("paused"))
        return cls(**found)


@dataclass(frozen=True)
class ScheduleRun:
    id: str
    schedule: str
    due_at: float  # when it came due (a manual run: when asked)
    at: float  # when this was decided
    outcome: RunOutcome
    reason: str = ""
    agent_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = str(self.outcome)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScheduleRun:
        found = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        found["outcome"] = RunOutcome(found["outcome"])
        found["reason"] = found.get("reason") or ""
        return cls(**found)


@dataclass(frozen=True)
class ScheduleView:
    """A schedule as ``schedule show`` and the page tell it: its next due times and
    its newest runs, newest first."""

    schedule: Schedule
    upcoming: tuple[float, ...]
    runs: tuple[ScheduleRun, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule.to_dict(),
            "upcoming": list(self.upcoming),
            "runs": [r.to_dict() for r in self.runs],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScheduleView:
        return cls(
            Schedule.from_dict(data["schedule"]),
            tuple(float(t) for t in data["upcoming"]),
            tuple(ScheduleRun.from_dict(r) for r in data["runs"]),
        )


# -- checks of what a person types ---------------------------------------------------


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise UsageError(
            f"bad schedule name {name!r}: 1-63 of a-z, 0-9, '-' and '_', "
            "starting with a letter or digit"
        )
    return name


def check_cron(expr: str) -> str:
    """A standard five-field cron expression (minute hour day month weekday),
    e.g. ``0 9 * * 1-5``; anything else is a ``UsageError`` saying so."""
    text = " ".join(expr.split()) if isinstance(expr, str) else ""
    hint = "five fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5'"
    if not CRON_RE.match(text) or len(text.split(" ")) != 5:
        raise UsageError(f"bad cron expression {expr!r}", hint=hint)
    if not croniter.is_valid(text):
        raise UsageError(f"bad cron expression {expr!r}", hint=hint)
    try:
        croniter(text, datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC"))).get_next(float)
    except (ValueError, KeyError, OverflowError) as exc:  # e.g. '0 0 31 2 *': never due
        raise UsageError(f"cron expression {expr!r} never comes due: {exc}", hint=hint) from None
    return text


def check_tz(tz: str) -> str:
    """An IANA time zone name (``Europe/Paris``, ``UTC``); never a path."""
    if not isinstance(tz, str) or len(tz) > 64 or not TZ_RE.match(tz) or ".." in tz:
        raise UsageError(f"bad time zone {tz!r}", hint="an IANA name, e.g. Europe/Paris or UTC")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UsageError(
            f"unknown time zone {tz!r}", hint="an IANA name, e.g. Europe/Paris or UTC"
        ) from None
    return tz


def check_overlap(value: str) -> Overlap:
    try:
        return Overlap(value)
    except ValueError:
        raise UsageError(f"bad overlap {value!r}: skip, queue or allow") from None


def check_catch_up(value: str) -> CatchUp:
    try:
        return CatchUp(value)
    except ValueError:
        raise UsageError(f"bad catch-up {value!r}: skip or once") from None


def check_budget(value: float | None) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_BUDGET_USD
    ):
        raise UsageError(f"a schedule's daily budget is an amount of USD above 0, not {value!r}")
    return float(value)


def check_prompt(prompt: str) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise UsageError("a schedule needs a prompt", hint="--prompt 'what its agents do'")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise UsageError(f"a schedule's prompt holds at most {MAX_PROMPT_CHARS} characters")
    if "\x00" in prompt:
        raise UsageError("a schedule's prompt holds no NUL character")
    return prompt


def check_schedule(schedule: Schedule) -> Schedule:
    """Every field checked as ``schedule add`` checks it; the same record, its cron
    written the one way."""
    check_name(schedule.name)
    check_prompt(schedule.prompt)
    if not schedule.template and not schedule.scenario:
        raise UsageError(
            "a schedule starts an agent of a template or on a scenario",
            hint="--agent TEMPLATE or --scenario S",
        )
    return replace(
        schedule,
        cron=check_cron(schedule.cron),
        tz=check_tz(schedule.tz),
        overlap=check_overlap(schedule.overlap),
        catch_up=check_catch_up(schedule.catch_up),
        budget_usd=check_budget(schedule.budget_usd),
    )


# -- time ------------------------------------------------------------------------------


def next_due(cron: str, tz: str, after: float) -> float:
    """The first time strictly after ``after`` (epoch seconds) when ``cron`` comes due,
    read as wall-clock time in ``tz`` (so ``0 9 * * *`` stays 9:00 across DST)."""
    start = datetime.fromtimestamp(after, ZoneInfo(tz))
    return float(croniter(cron, start).get_next(float))


def upcoming(cron: str, tz: str, after: float, count: int) -> list[float]:
    out: list[float] = []
    at = after
    for _ in range(count):
        at = next_due(cron, tz, at)
        out.append(at)
    return out


def missed(cron: str, tz: str, due: float, now: float) -> int:
    """How many times ``cron`` came due from ``due`` (itself one, if <= ``now``) to
    ``now``: counted up to ``MAX_MISSED_COUNTED``."""
    count = 0
    at = due
    while at <= now and count < MAX_MISSED_COUNTED:
        count += 1
        at = next_due(cron, tz, at)
    return count


def day_start(now: float, tz: str) -> float:
    """Midnight of ``now``'s day in ``tz``: where the schedule's "today" begins."""
    local = datetime.fromtimestamp(now, ZoneInfo(tz))
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight.timestamp()


def day_end(now: float, tz: str) -> float:
    local = datetime.fromtimestamp(now, ZoneInfo(tz)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return (local + timedelta(days=1)).timestamp()


# -- decisions -------------------------------------------------------------------------


def overlap_decision(
    overlap: Overlap, previous_running: str | None, queued: bool
) -> tuple[Decision, str]:
    """What a due run does: ``previous_running`` is the id of the previous run's agent
    while it still runs (else None); ``queued`` whether a run already waits for it."""
    if previous_running is None or overlap is Overlap.ALLOW:
        return Decision.START, ""
    if overlap is Overlap.QUEUE and not queued:
        return Decision.QUEUE, f"waits for agent {previous_running}, still running"
    if overlap is Overlap.QUEUE:
        return Decision.SKIP, f"a run already waits for agent {previous_running}"
    return Decision.SKIP, f"agent {previous_running} of the previous run still runs"


def catch_up_decision(catch_up: CatchUp, count: int) -> tuple[bool, str]:
    """Whether one run starts now for ``count`` runs missed while the daemon was down,
    and what the history says of them."""
    many = f"{count}+" if count >= MAX_MISSED_COUNTED else str(count)
    runs = "run" if count == 1 else "runs"
    if catch_up is CatchUp.ONCE:
        return True, f"{many} {runs} missed while the daemon was down: caught up once"
    return False, f"{many} {runs} missed while the daemon was down (catch-up: skip)"


def budget_refusal(budget_usd: float | None, spent_today: float) -> str | None:
    """Why a run is refused by the schedule's daily budget, or None."""
    if budget_usd is None or spent_today < budget_usd:
        return None
    return (
        f"its runs cost ${spent_today:.2f} today, at or past its daily budget of ${budget_usd:.2f}"
    )
