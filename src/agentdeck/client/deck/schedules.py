"""``RemoteDeck``'s schedules: ``/api/schedules``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentdeck.client.deck.base import RemoteBase, field
from agentdeck.core.schedules import Schedule, ScheduleRun, ScheduleView, check_name


def _path(name: str, action: str | None = None) -> str:
    check_name(name)  # a name no schedule can have is refused here, as in-process
    path = f"/api/schedules/{quote(name, safe='')}"
    return f"{path}/{action}" if action else path


class RemoteSchedules(RemoteBase):
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
        body: dict[str, Any] = {
            "name": name, "cron": cron, "prompt": prompt, "template": template,
            "scenario": scenario, "project": project, "cwd": cwd, "worktree": worktree,
            "budget_usd": budget_usd, "overlap": overlap, "tz": tz, "catch_up": catch_up,
        }  # fmt: skip
        body = {k: v for k, v in body.items() if v is not None}
        return Schedule.from_dict(await self.http.call("POST", "/api/schedules", json=body))

    async def schedules(self) -> list[Schedule]:
        answer = await self.http.call("GET", "/api/schedules")
        return [Schedule.from_dict(s) for s in field(answer, "schedules")]

    async def schedule(self, name: str) -> ScheduleView:
        return ScheduleView.from_dict(await self.http.call("GET", _path(name)))

    async def pause_schedule(self, name: str) -> Schedule:
        return Schedule.from_dict(await self.http.call("POST", _path(name, "pause")))

    async def resume_schedule(self, name: str) -> Schedule:
        return Schedule.from_dict(await self.http.call("POST", _path(name, "resume")))

    async def run_schedule(self, name: str) -> ScheduleRun:
        return ScheduleRun.from_dict(await self.http.call("POST", _path(name, "run")))

    async def remove_schedule(self, name: str) -> None:
        await self.http.call("DELETE", _path(name))
