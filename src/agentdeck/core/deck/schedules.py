"""The Deck interface, schedules: agents that start themselves when a cron
expression comes due (``core.schedules``). A schedule's agents are owned by whoever
added it (the token's user through the daemon)."""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.schedules import Schedule, ScheduleRun, ScheduleView


class ScheduleOps(Protocol):
    """Add, list, show, pause, resume, run by hand, remove."""

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
    ) -> Schedule:
        """A new schedule: an agent of ``template`` (or on ``scenario``) with
        ``prompt`` each time ``cron`` (five fields, wall-clock time in ``tz``) comes
        due. ``UsageError`` for a bad name, cron, time zone, overlap, catch-up or
        budget, an unknown template or scenario; ``Refused`` for a taken name."""
        ...

    async def schedules(self) -> list[Schedule]:
        """Every schedule, by name."""
        ...

    async def schedule(self, name: str) -> ScheduleView:
        """One schedule, its next due times and its newest runs (``NotFound``)."""
        ...

    async def pause_schedule(self, name: str) -> Schedule:
        """No run until it is resumed."""
        ...

    async def resume_schedule(self, name: str) -> Schedule:
        """Runs again from its next due time on (what it missed paused is not run)."""
        ...

    async def run_schedule(self, name: str) -> ScheduleRun:
        """One run now, through its daily budget and overlap rules: the run says
        whether an agent started (and which) or why not."""
        ...

    async def remove_schedule(self, name: str) -> None:
        """Forget the schedule and its history (its agents stay)."""
        ...
