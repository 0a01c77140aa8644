"""``RemoteDeck``'s knowledge: templates (``/api/templates``), the policy
(``/api/policy``), memory (``/api/memory``), usage and budgets (``/api/usage``,
``/api/budgets``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentdeck.client.deck.base import field
from agentdeck.client.deck.memories import RemoteMemories
from agentdeck.core.knowledge import (
    MemoryRecord,
    PolicyCheck,
    ProfileSummary,
    TemplateCatalog,
    budget_args,
    budget_from_dict,
    forget_selector,
    record_from_dict,
    search_limit,
)
from agentdeck.core.memory import MemoryHit
from agentdeck.core.policy_replay import MAX_PROFILE_TEXT, PolicyReplay
from agentdeck.core.templates import Template
from agentdeck.core.usage import (
    MAX_SINCE_SECONDS,
    Bucket,
    Budget,
    BudgetScope,
    UsageGroup,
    UsageReport,
)
from agentdeck.errors import NotFound, UsageError


def _project(project: str | None) -> dict[str, str]:
    return {"project": project} if project else {}


def since_text(seconds: float) -> str:
    """``seconds`` as the API's period (``/api/usage?since=``): whole minutes, or
    minutes with a fraction, which the API reads back to the same seconds."""
    number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
    if not number or not 0 < seconds <= MAX_SINCE_SECONDS:
        raise UsageError(f"a period is more than 0 and at most 366 days, not {seconds!r} seconds")
    minutes = seconds / 60
    return f"{int(minutes)}m" if minutes == int(minutes) else f"{minutes:.6f}m"


class RemoteKnowledge(RemoteMemories):
    # templates

    async def templates(self, project: str | None = None) -> TemplateCatalog:
        answer = await self.http.call("GET", "/api/templates", params=_project(project))
        return TemplateCatalog.from_dict(answer)

    async def template(self, name: str, project: str | None = None) -> Template:
        if not name:
            raise NotFound("agent template", name)
        path = f"/api/templates/{quote(name, safe='')}"
        return Template.from_dict(await self.http.call("GET", path, params=_project(project)))

    # the policy

    async def policy_check(
        self,
        tool: str,
        tool_input: dict[str, Any] | None = None,
        *,
        profile: str | None = None,
        cwd: str | None = None,
        home: str | None = None,
    ) -> PolicyCheck:
        body = {
            "tool": tool, "input": tool_input or {}, "profile": profile, "cwd": cwd, "home": home,
        }  # fmt: skip
        return PolicyCheck.from_dict(await self.http.call("POST", "/api/policy/check", json=body))

    async def policy_profiles(self) -> list[ProfileSummary]:
        answer = await self.http.call("GET", "/api/policy/profiles")
        return [ProfileSummary.from_dict(p) for p in field(answer, "profiles")]

    async def policy_replay(
        self,
        profile: str,
        *,
        profile_text: str | None = None,
        since_seconds: float | None = None,
        agent: str | None = None,
        project: str | None = None,
    ) -> PolicyReplay:
        if profile_text is not None and len(profile_text) > MAX_PROFILE_TEXT:
            raise UsageError(f"a profile is at most {MAX_PROFILE_TEXT // 1024} KB of text")
        body = {
            "profile": profile, "profile_text": profile_text, "since_seconds": since_seconds,
            "agent": agent, "project": project,
        }  # fmt: skip
        answer = await self.http.call("POST", "/api/policy/replay", json=body, timeout=600)
        return PolicyReplay.from_dict(answer)

    # memory

    async def memory_search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        params = {"q": query, "limit": search_limit(limit), **_project(project)}
        answer = await self.http.call("GET", "/api/memory/search", params=params)
        return [MemoryHit.from_dict(h) for h in field(answer, "hits")]

    async def memory_record(self, memory_id: str) -> MemoryRecord:
        return record_from_dict(await self.http.call("GET", _memory_path(memory_id)))

    async def forget_memory(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        session_id = session_id.strip() if session_id else None
        key, value = forget_selector(memory_id, session_id or None, project or None)
        if key == "memory_id":
            answer = await self.http.call("DELETE", _memory_path(value))
        else:
            params = {"session" if key == "session_id" else "project": value}
            answer = await self.http.call("DELETE", "/api/memory", params=params)
        return int(field(answer, "forgotten"))

    async def memory_stats(self) -> dict[str, int]:
        answer = await self.http.call("GET", "/api/memory/stats")
        return {k: int(v) for k, v in answer.items()}

    # usage and budgets

    async def usage(self, *, since_seconds: float, bucket: Bucket, by: UsageGroup) -> UsageReport:
        params = {"since": since_text(since_seconds), "bucket": str(bucket), "by": str(by)}
        return UsageReport.from_dict(await self.http.call("GET", "/api/usage", params=params))

    async def budgets(self) -> list[Budget]:
        answer = await self.http.call("GET", "/api/budgets")
        return [budget_from_dict(b) for b in field(answer, "budgets")]

    async def set_budget(self, scope: BudgetScope, name: str, daily_usd: float) -> Budget:
        kind, name, amount = budget_args(scope, name, daily_usd)  # NaN has no JSON
        body = {"scope": str(kind), "name": name, "daily_usd": amount}
        return budget_from_dict(await self.http.call("PUT", "/api/budgets", json=body))

    async def remove_budget(self, scope: BudgetScope, name: str) -> None:
        kind, name, _ = budget_args(scope, name, 0.0)
        await self.http.call("DELETE", "/api/budgets", params={"scope": str(kind), "name": name})


def _memory_path(memory_id: str) -> str:
    if not memory_id:
        raise NotFound("memory record", memory_id)
    return f"/api/memory/{quote(memory_id, safe='')}"
