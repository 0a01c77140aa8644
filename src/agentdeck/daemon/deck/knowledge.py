"""The Deck's knowledge beside the agents: agent templates, the policy (check,
explain), memory, usage and budgets (``core.deck.knowledge``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from agentdeck.core.knowledge import (
    MemoryRecord,
    PolicyCheck,
    ProfileSummary,
    TemplateCatalog,
    budget_args,
    forget_selector,
    search_limit,
)
from agentdeck.core.memory import MemoryHit
from agentdeck.core.policy_replay import PolicyReplay
from agentdeck.core.templates import Template
from agentdeck.core.usage import (
    MAX_SINCE_SECONDS,
    Bucket,
    Budget,
    BudgetScope,
    UsageGroup,
    UsageReport,
)
from agentdeck.daemon.deck.memories import MemoryReview
from agentdeck.errors import NotFound, PolicyError, Refused, UsageError
from agentdeck.memory.projects import project_of


def absolute_dir(value: str | None, what: str = "project") -> str | None:
    """A directory a caller names (None or empty: none), absolute: a relative one
    would mean the deck's own working directory, nothing to the caller."""
    if not value:
        return None
    if "\x00" in value or not value.startswith("/"):
        raise UsageError(
            f"{what} must be an absolute directory, not {value!r}",
            hint="give the directory's absolute path",
        )
    return value


class Knowledge(MemoryReview):
    # Policy replays under way in this deck: each re-decides a whole history on the
    # daemon's loop, so one at a time (a second is refused, not queued behind it).
    _policy_replays = 0
    # -- templates -------------------------------------------------------------------

    async def templates(self, project: str | None = None) -> TemplateCatalog:
        from agentdeck.orchestration.templates import catalog

        found = await asyncio.to_thread(catalog, self.settings, absolute_dir(project))
        return TemplateCatalog(
            templates=tuple(sorted(found.templates.values(), key=lambda t: t.name)),
            invalid=tuple(e.message for e in found.invalid),
        )

    async def template(self, name: str, project: str | None = None) -> Template:
        from agentdeck.orchestration.templates import resolve

        return await asyncio.to_thread(resolve, self.settings, name, absolute_dir(project))

    # -- the policy ------------------------------------------------------------------

    async def policy_check(
        self,
        tool: str,
        tool_input: dict[str, Any] | None = None,
        *,
        profile: str | None = None,
        cwd: str | None = None,
        home: str | None = None,
    ) -> PolicyCheck:
        from agentdeck.core.policy import decide
        from agentdeck.governance.profiles import builtin_profile_names

        if not tool or "\x00" in tool:
            raise UsageError(f"a policy check needs a tool's name, not {tool!r}")
        if tool_input is not None and not isinstance(tool_input, dict):
            raise UsageError("a tool's input is a JSON object, e.g. {'command': 'ls'}")
        workspace = absolute_dir(cwd, "cwd") or str(Path.cwd())
        home_dir = absolute_dir(home, "home") or str(Path.home())
        known = builtin_profile_names()
        if profile is not None and profile not in known:
            # A path would have the deck read any file its user can, for any caller.
            raise PolicyError(
                profile,
                f"not a built-in profile (built-in: {', '.join(known)}); a profile file "
                "is checked where it is: agentdeck policy check --profile FILE",
            )
        # As agents get it: the deck's secrets denied.
        loaded = self._runner.governor.profile_named(profile or self.settings.profile)
        verdict = decide(loaded, tool, tool_input or {}, workspace=workspace, home=home_dir)
        return PolicyCheck(
            decision=verdict.decision,
            reason=verdict.reason,
            rule=verdict.rule,
            source=verdict.source,
            profile=loaded.name,
            profile_source=loaded.source,
            sandbox=loaded.sandbox.to_dict(),
            sandbox_summary=loaded.sandbox.summary(),
        )

    async def policy_profiles(self) -> list[ProfileSummary]:
        from agentdeck.governance.profiles import builtin_profile_names, load_profile

        def read() -> list[ProfileSummary]:
            profiles = [load_profile(name) for name in builtin_profile_names()]
            return [ProfileSummary(p.name, p.default, p.description) for p in profiles]

        return await asyncio.to_thread(read)

    async def policy_replay(
        self,
        profile: str,
        *,
        profile_text: str | None = None,
        since_seconds: float | None = None,
        agent: str | None = None,
        project: str | None = None,
    ) -> PolicyReplay:
        from agentdeck.governance.replay import ReplayQuery, candidate_profile, replay

        candidate = candidate_profile(profile, profile_text)
        query = ReplayQuery(since_seconds, agent or None, absolute_dir(project))
        if self._policy_replays:
            raise Refused(
                "a policy replay is already running on this deck",
                hint="try again once it has answered",
            )
        self._policy_replays += 1
        try:
            return await replay(self._store, self.settings, candidate, query)
        finally:
            self._policy_replays -= 1

    # -- memory ----------------------------------------------------------------------

    @staticmethod
    def memory_project(path: str | None) -> str | None:
        """A project filter as memory stores it (the main worktree's directory)."""
        return project_of(path) if path else None

    def _memory_where(self, project: str | None) -> str | None:
        return self.memory_project(absolute_dir(project))

    async def memory_search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        """Ranked full-text search; ``project`` an absolute directory (memory's name
        for it is its main worktree's)."""
        return await self._memory.search(
            query, project=self._memory_where(project), limit=search_limit(limit)
        )

    @staticmethod
    def memory_text(record: MemoryRecord) -> str:
        """A whole record, readable: a header of facts, then its text."""
        from agentdeck.memory.mcp_server import record_text

        return record_text(record)

    async def memory_stats(self) -> dict[str, int]:
        return await self._memory.stats()

    async def memory_record(self, memory_id: str) -> MemoryRecord:
        """One whole record; ``NotFound`` for an unknown id."""
        return await self._memory.get(memory_id)

    async def forget_memory(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        """Delete one record, a session's or a project's; how many went."""
        # An empty session or project names nothing (the API's query takes them so).
        session_id = session_id.strip() if session_id else None
        key, value = forget_selector(memory_id, session_id or None, self._memory_where(project))
        forgotten = await self._memory.forget(**{key: value})
        if key == "memory_id" and forgotten == 0:
            raise NotFound("memory record", value)
        return forgotten

    # -- usage and budgets -----------------------------------------------------------

    async def usage(self, *, since_seconds: float, bucket: Bucket, by: UsageGroup) -> UsageReport:
        """Cost and tokens over time, the fleet's daily cap, the budgets."""
        from agentdeck.store.usage import report

        number = isinstance(since_seconds, int | float) and not isinstance(since_seconds, bool)
        if not number or not 0 < since_seconds <= MAX_SINCE_SECONDS:
            raise UsageError(
                f"a period is more than 0 and at most 366 days, not {since_seconds!r} seconds"
            )
        try:
            bucket, by = Bucket(bucket), UsageGroup(by)
        except ValueError as exc:
            hint = "bucket: hour or day; by: none, project, template or user"
            raise UsageError(str(exc), hint=hint) from None
        cap = self._runner.governor.profile_named().budgets.daily_usd
        return await report(
            self._usage_records,
            since_seconds=since_seconds,
            bucket=bucket,
            by=by,
            daily_cap_usd=cap,
            now=time.time(),
        )

    async def budgets(self) -> list[Budget]:
        from agentdeck.core.guardrails import day_start

        return await self._usage_records.budgets(today=day_start(time.time()))

    async def set_budget(self, scope: BudgetScope, name: str, daily_usd: float) -> Budget:
        kind, name, amount = budget_args(scope, name, daily_usd)
        return await self._usage_records.set_budget(kind, name, amount)

    async def remove_budget(self, scope: BudgetScope, name: str) -> None:
        kind, name, _ = budget_args(scope, name, 0.0)
        await self._usage_records.remove_budget(kind, name)
