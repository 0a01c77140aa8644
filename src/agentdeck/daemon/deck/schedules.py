"""The Deck's schedules: add, list, show, pause, resume, run by hand, remove
(``core.schedules``; rows in ``store.schedules``; the task that fires them is
``daemon.scheduler``'s, started by the daemon with ``start_scheduling``).

A schedule's agents are its adder's (``by``: the web layer passes the request's
user; in-process the deck's own, ``admin``), started as ``create_agent`` starts
any agent, so the project's and fleet's budgets and the template's profile apply.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import cast

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.schedules import (
    CatchUp,
    Overlap,
    Schedule,
    ScheduleRun,
    ScheduleView,
    check_name,
    check_schedule,
    next_due,
    upcoming,
)
from agentdeck.core.usage import DEFAULT_OWNER
from agentdeck.daemon.deck.agents import Agents
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.daemon.scheduler import Clock, Scheduler
from agentdeck.errors import NotFound, ScenarioError, TemplateError, UsageError
from agentdeck.store.schedules import ScheduleStore

logger = logging.getLogger(__name__)

UPCOMING = 5
HISTORY = 50


class Schedules(DeckParts):
    _scheduler: Scheduler | None = None

    # -- the task ------------------------------------------------------------------------

    def _schedule_runner(self, clock: Clock | None = None) -> Scheduler:
        if self._scheduler is None:
            self._scheduler = Scheduler(
                ScheduleStore(self._store),
                start_agent=self._start_scheduled,
                running=self._still_running,
                cost_of=self._cost_of,
                clock=clock,
            )
        elif clock is not None:
            self._scheduler.clock = clock
        return self._scheduler

    def start_scheduling(self, clock: Clock | None = None) -> Scheduler:
        """Fire the schedules from now on (the daemon's; first what came due while it
        was down, by each schedule's catch-up rule). ``clock``: tests' own."""
        scheduler = self._schedule_runner(clock)
        scheduler.start()
        return scheduler

    async def stop_scheduling(self) -> None:
        if self._scheduler is not None:
            await self._scheduler.stop()

    def _clock_now(self) -> float:
        return self._schedule_runner().clock.now()

    async def _start_scheduled(self, schedule: Schedule) -> str:
        spec = AgentSpec(
            prompt=schedule.prompt,
            project=schedule.project,
            cwd=schedule.cwd,
            scenario=schedule.scenario,
            workspace="worktree" if schedule.worktree else None,
            owner=schedule.created_by,
        )
        # The Deck composes both parts: a scheduled agent starts as any agent starts.
        agent = await cast(Agents, self).create_agent(
            spec, keep_alive=False, template=schedule.template
        )
        return agent.id

    async def _still_running(self, agent_id: str) -> bool:
        try:
            agent = self._fresh(await self._store.find_agent(agent_id))
        except NotFound:
            return False
        return agent.state.is_live and agent.state is not AgentState.IDLE

    async def _cost_of(self, agent_ids: list[str]) -> float:
        total = 0.0
        for agent_id in agent_ids:
            try:
                total += self._fresh(await self._store.find_agent(agent_id)).cost_usd
            except NotFound:
                continue
        return total

    # -- operations --------------------------------------------------------------------

    async def add_schedule(
        self,
        name: str,
        cron: str,
        *,
        prompt: str,
        template: str | None = None,
        scenario: str | None = None,
        project: str | None = None,
        cwd: str | None = None,
        worktree: bool = False,
        budget_usd: float | None = None,
        overlap: str = "skip",
        tz: str = "UTC",
        catch_up: str = "skip",
        by: str | None = None,
    ) -> Schedule:
        now = self._clock_now()
        where = project or cwd
        if not where:
            raise UsageError("a schedule needs its project directory", hint="--project DIR")
        if not Path(where).is_absolute() or (cwd is not None and not Path(cwd).is_absolute()):
            raise UsageError("a schedule's project and cwd are absolute paths")
        draft = check_schedule(
            Schedule(
                name=name,
                cron=cron,
                prompt=prompt,
                project=where,
                created_at=now,
                created_by=by or DEFAULT_OWNER,
                next_at=now,
                tz=tz,
                template=template or None,
                scenario=scenario or None,
                cwd=cwd,
                worktree=worktree,
                budget_usd=budget_usd,
                overlap=cast(Overlap, overlap),
                catch_up=cast(CatchUp, catch_up),
            )
        )
        self._check_agent_source(draft)
        draft = replace(draft, next_at=next_due(draft.cron, draft.tz, now))
        made = await ScheduleStore(self._store).add(draft)
        if self._scheduler is not None:
            self._scheduler.poke()
        logger.info("schedule %s added by %s: %s", made.name, made.created_by, made.cron)
        return made

    def _check_agent_source(self, schedule: Schedule) -> None:
        """The template exists (and its profile allows it), the scenario too: a
        clear ``UsageError`` now rather than a failed run at 9:00."""
        from agentdeck.orchestration.templates import resolve

        if schedule.template:
            try:
                resolve(self.settings, schedule.template, schedule.project)
            except (NotFound, TemplateError) as exc:
                raise UsageError(
                    f"unknown agent template {schedule.template!r}: {exc}",
                    hint="agentdeck templates ls",
                ) from None
        if schedule.scenario:
            from agentdeck.mockmodel.loader import builtin_scenario_path

            try:
                builtin_scenario_path(schedule.scenario)
            except ScenarioError as exc:
                raise UsageError(f"unknown scenario {schedule.scenario!r}: {exc}") from None

    async def schedules(self) -> list[Schedule]:
        return await ScheduleStore(self._store).all()

    async def schedule(self, name: str) -> ScheduleView:
        store = ScheduleStore(self._store)
        found = await store.get(check_name(name))
        after = max(self._clock_now(), found.next_at - 1e-3)
        nexts = () if found.paused else tuple(upcoming(found.cron, found.tz, after, UPCOMING))
        return ScheduleView(found, nexts, tuple(await store.runs(name, limit=HISTORY)))

    async def pause_schedule(self, name: str) -> Schedule:
        return await ScheduleStore(self._store).set_paused(check_name(name), True)

    async def resume_schedule(self, name: str) -> Schedule:
        """Runs again from its next due time on; what it missed while paused is not run."""
        store = ScheduleStore(self._store)
        found = await store.get(check_name(name))
        resumed = await store.set_paused(
            name, False, next_at=next_due(found.cron, found.tz, self._clock_now())
        )
        if self._scheduler is not None:
            self._scheduler.poke()
        return resumed

    async def run_schedule(self, name: str) -> ScheduleRun:
        """One run now, through the schedule's budget and overlap rules."""
        found = await ScheduleStore(self._store).get(check_name(name))
        return await self._schedule_runner().run_now(found)

    async def remove_schedule(self, name: str) -> None:
        await ScheduleStore(self._store).remove(check_name(name))
