"""The Deck interface, what the deck knows: agent templates, the policy (check,
explain), memory, usage and budgets."""

from __future__ import annotations

from typing import Any, Protocol

from agentdeck.core.deck.memories import MemoryReviewOps
from agentdeck.core.knowledge import MemoryRecord, PolicyCheck, ProfileSummary, TemplateCatalog
from agentdeck.core.memory import MemoryHit
from agentdeck.core.policy_replay import PolicyReplay
from agentdeck.core.templates import Template
from agentdeck.core.usage import Bucket, Budget, BudgetScope, UsageGroup, UsageReport


class KnowledgeOps(MemoryReviewOps, Protocol):
    """Agent templates, the policy (check, explain), memory (and the memories agents
    propose: ``core.deck.memories``), usage and budgets.

    A ``project`` is an absolute directory (a relative one is a ``UsageError``: the
    deck's working directory means nothing to the caller)."""

    # templates

    async def templates(self, project: str | None = None) -> TemplateCatalog:
        """The agent templates an agent started in ``project`` may use (a project's
        override the user's, which override the built-in ones), and the files that
        did not load."""
        ...

    async def template(self, name: str, project: str | None = None) -> Template:
        """One template as seen from ``project`` (``NotFound`` for none; a file of
        that name that does not load is its ``TemplateError``)."""
        ...

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
        """What ``tool`` called with ``tool_input`` gets under a built-in ``profile``
        (None: the deck's own) as agents get it (the deck's secrets denied), and which
        rule decided. ``cwd``: the agent's workspace, ``home``: what ``~`` stands for
        (absolute; default: the deck's). A profile that is not built in is a
        ``PolicyError``: the deck reads no file for a caller."""
        ...

    async def policy_profiles(self) -> list[ProfileSummary]:
        """The built-in policy profiles, by name."""
        ...

    async def policy_replay(
        self,
        profile: str,
        *,
        profile_text: str | None = None,
        since_seconds: float | None = None,
        agent: str | None = None,
        project: str | None = None,
    ) -> PolicyReplay:
        """Policy what-if on history: every tool call the event log recorded (of the
        last ``since_seconds``; of one ``agent`` or one ``project``, not both)
        re-decided under a candidate profile, the calls whose decision would change
        grouped by the rule that decides now. The candidate: a built-in ``profile``
        name, or ``profile_text`` (a profile's YAML, or a settings.json when
        ``profile`` ends in ``.json``) the caller read; the deck reads no file for
        a caller (``PolicyError``, as for a malformed or unknown profile). An
        unknown agent is ``NotFound``; bad values a ``UsageError``."""
        ...

    # memory

    async def memory_search(
        self, query: str, *, project: str | None = None, limit: int = 10
    ) -> list[MemoryHit]:
        """Ranked full-text search, best first; any text is a query (punctuation is
        not syntax), an empty one finds nothing. ``limit``: 1 to 100."""
        ...

    async def memory_record(self, memory_id: str) -> MemoryRecord:
        """One whole record (``NotFound`` for an unknown id)."""
        ...

    async def forget_memory(
        self,
        *,
        memory_id: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
    ) -> int:
        """Delete one record, a session's or a project's (exactly one, else a
        ``UsageError``); how many went. An unknown ``memory_id`` is ``NotFound``."""
        ...

    async def memory_stats(self) -> dict[str, int]:
        """``{"observations": N, "summaries": M, "projects": P}``."""
        ...

    # usage and budgets

    async def usage(self, *, since_seconds: float, bucket: Bucket, by: UsageGroup) -> UsageReport:
        """Cost and tokens over the last ``since_seconds`` (more than 0, at most 366
        days), per ``bucket``, grouped ``by``; the fleet's daily cap and the budgets."""
        ...

    async def budgets(self) -> list[Budget]:
        """Every daily budget, with what its user or project spent today (UTC)."""
        ...

    async def set_budget(self, scope: BudgetScope, name: str, daily_usd: float) -> Budget:
        """Set (or change) a user's or a project's daily budget (USD, finite, >= 0);
        it holds from the next agent started on."""
        ...

    async def remove_budget(self, scope: BudgetScope, name: str) -> None:
        """Remove a budget (``NotFound`` for none)."""
        ...
