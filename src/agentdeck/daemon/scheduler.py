"""The daemon's scheduler: one asyncio task that wakes at the next due time of the
deck's schedules (``core.schedules``, rows in ``store.schedules``) and starts their
agents through the Deck, as any agent starts (the project's and fleet's budgets,
the template's profile apply).

A due schedule goes through, in order: its daily budget (refused past it), its
overlap rule (skip / queue / allow while the previous run's agent still runs), then
its agent starts. The due time is claimed before the agent starts (``claim`` moves
``next_at`` on from the value read), so it starts once even if two schedulers share
the database. At start, what came due while the daemon was down goes through the
schedule's catch-up rule instead (``skip``: recorded as missed; ``once``: one run).

Time is the injected ``Clock``'s (``SystemClock`` in the daemon): tests move a
``ManualClock`` and the scheduler wakes, with no sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from agentdeck.core.schedules import (
    Decision,
    RunOutcome,
    Schedule,
    ScheduleRun,
    budget_refusal,
    catch_up_decision,
    day_start,
    missed,
    next_due,
    overlap_decision,
)
from agentdeck.errors import AgentdeckError, PolicyDenied
from agentdeck.store.schedules import ScheduleStore, new_run_id

logger = logging.getLogger(__name__)

MAX_NAP_SECONDS = 60.0  # a schedule another process added is seen within this
QUEUE_NAP_SECONDS = 2.0  # while a run waits for its previous agent to end

StartAgent = Callable[[Schedule], Awaitable[str]]  # the started agent's id
Running = Callable[[str], Awaitable[bool]]  # whether an agent still runs
CostOf = Callable[[list[str]], Awaitable[float]]  # what these agents cost


class Clock(Protocol):
    def now(self) -> float: ...

    async def nap(self, seconds: float, poke: asyncio.Event) -> None:
        """Return after ``seconds``, or sooner once ``poke`` is set."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    async def nap(self, seconds: float, poke: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, seconds)):
                await poke.wait()


class Scheduler:
    def __init__(
        self,
        store: ScheduleStore,
        *,
        start_agent: StartAgent,
        running: Running,
        cost_of: CostOf,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.clock: Clock = clock or SystemClock()
        self._start_agent = start_agent
        self._running = running
        self._cost_of = cost_of
        self._poke = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.ticks = 0  # wake-ups, for tests and the benchmark

    # -- the task ------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._serve(), name="scheduler")

    @property
    def serving(self) -> bool:
        return self._task is not None

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def poke(self) -> None:
        """Look again now (a schedule was added, resumed, or the clock moved)."""
        self._poke.set()

    async def _serve(self) -> None:
        try:
            await self.catch_up()
        except Exception:
            logger.exception("schedules: catching up failed")
        while True:
            self._poke.clear()
            try:
                await self.tick()
                nap = await self._nap()
            except Exception:
                logger.exception("schedules: a tick failed")
                nap = QUEUE_NAP_SECONDS
            await self.clock.nap(nap, self._poke)

    async def _nap(self) -> float:
        soonest = await self.store.soonest()
        nap = MAX_NAP_SECONDS if soonest is None else soonest - self.clock.now()
        if await self.store.queued():
            nap = min(nap, QUEUE_NAP_SECONDS)
        return max(0.0, min(nap, MAX_NAP_SECONDS))

    # -- one pass --------------------------------------------------------------------------

    async def catch_up(self) -> list[ScheduleRun]:
        """At start: each schedule that came due while the daemon was down, by its
        catch-up rule."""
        now = self.clock.now()
        out = []
        for schedule in await self.store.due(now):
            count = missed(schedule.cron, schedule.tz, schedule.next_at, now)
            go, why = catch_up_decision(schedule.catch_up, count)
            if go:
                run = await self._due(schedule, now, why)
            else:
                run = self._run(schedule, schedule.next_at, now, RunOutcome.MISSED, why)
                if not await self.store.claim(schedule, self._next(schedule, now), run):
                    continue
                logger.info("schedule %s: %s", schedule.name, why)
            if run is not None:
                out.append(run)
        return out

    async def tick(self) -> list[ScheduleRun]:
        """Every schedule due now, then every queued run whose wait is over."""
        self.ticks += 1
        now = self.clock.now()
        out = []
        for schedule in await self.store.due(now):
            run = await self._due(schedule, now)
            if run is not None:
                out.append(run)
        for waiting in await self.store.queued():
            run = await self._dequeue(waiting)
            if run is not None:
                out.append(run)
        return out

    async def run_now(self, schedule: Schedule) -> ScheduleRun:
        """``schedule run NAME``: one run now, through the budget and overlap rules,
        its next due time untouched."""
        now = self.clock.now()
        outcome, why = await self._decide(schedule, now)
        if outcome is not RunOutcome.STARTED:
            return await self.store.record(self._run(schedule, now, now, outcome, why))
        run = await self.store.record(self._run(schedule, now, now, RunOutcome.FAILED, "starting"))
        return await self._started(schedule, run, "run by hand")

    # -- a due time ------------------------------------------------------------------------

    def _next(self, schedule: Schedule, now: float) -> float:
        return next_due(schedule.cron, schedule.tz, max(now, schedule.next_at))

    @staticmethod
    def _run(
        schedule: Schedule, due: float, now: float, outcome: RunOutcome, reason: str
    ) -> ScheduleRun:
        return ScheduleRun(new_run_id(), schedule.name, due, now, outcome, reason)

    async def _decide(self, schedule: Schedule, now: float) -> tuple[RunOutcome, str]:
        since = day_start(now, schedule.tz)
        if schedule.budget_usd is not None:
            spent = await self._cost_of(await self.store.agents_since(schedule.name, since))
            refused = budget_refusal(schedule.budget_usd, spent)
            if refused is not None:
                return RunOutcome.REFUSED, refused
        previous = await self.store.last_agent(schedule.name)
        still = previous if previous is not None and await self._running(previous) else None
        queued = bool(await self.store.queued(schedule.name))
        decision, why = overlap_decision(schedule.overlap, still, queued)
        if decision is Decision.QUEUE:
            return RunOutcome.QUEUED, why
        if decision is Decision.SKIP:
            return RunOutcome.SKIPPED, why
        return RunOutcome.STARTED, ""

    async def _due(self, schedule: Schedule, now: float, note: str = "") -> ScheduleRun | None:
        outcome, why = await self._decide(schedule, now)
        reason = "; ".join(x for x in (note, why) if x)
        placeholder = RunOutcome.FAILED if outcome is RunOutcome.STARTED else outcome
        run = self._run(schedule, schedule.next_at, now, placeholder, reason or "starting")
        if not await self.store.claim(schedule, self._next(schedule, now), run):
            return None  # another scheduler took this due time
        if outcome is not RunOutcome.STARTED:
            logger.info("schedule %s: %s (%s)", schedule.name, outcome, reason)
            return run
        return await self._started(schedule, run, note)

    async def _dequeue(self, waiting: ScheduleRun) -> ScheduleRun | None:
        try:
            schedule = await self.store.get(waiting.schedule)
        except AgentdeckError:
            return None
        if schedule.paused:
            return None
        previous = await self.store.last_agent(schedule.name)
        if previous is not None and await self._running(previous):
            return None
        now = self.clock.now()
        outcome, why = await self._decide(schedule, now)
        if outcome is RunOutcome.REFUSED:
            await self.store.settle(waiting.id, outcome, at=now, reason=why)
            return ScheduleRun(waiting.id, schedule.name, waiting.due_at, now, outcome, why)
        if not await self.store.settle(
            waiting.id, RunOutcome.FAILED, at=now, reason="starting", expected=RunOutcome.QUEUED
        ):
            return None
        return await self._started(schedule, waiting, "queued behind the previous run")

    async def _started(self, schedule: Schedule, run: ScheduleRun, note: str) -> ScheduleRun:
        now = self.clock.now()
        try:
            agent_id = await self._start_agent(schedule)
        except AgentdeckError as exc:
            # Refused by policy (the project's, user's or fleet's budget, the profile)
            # is said as such; anything else kept the agent from starting.
            outcome = RunOutcome.REFUSED if isinstance(exc, PolicyDenied) else RunOutcome.FAILED
            reason = f"{type(exc).__name__}: {exc}"
            await self.store.settle(run.id, outcome, at=now, reason=reason)
            logger.warning("schedule %s: its agent did not start: %s", schedule.name, exc)
            return ScheduleRun(run.id, schedule.name, run.due_at, now, outcome, reason)
        await self.store.settle(run.id, RunOutcome.STARTED, at=now, reason=note, agent_id=agent_id)
        logger.info("schedule %s: started agent %s", schedule.name, agent_id)
        return ScheduleRun(
            run.id, schedule.name, run.due_at, now, RunOutcome.STARTED, note, agent_id
        )
