"""The Governor: every tool call of an agent run by agentdeck goes through it. It asks
the policy engine (the one hand-started sessions' hooks ask too), applies remembered
grants, turns "ask" into a persisted approval request waited for (the dashboard, the
CLI or the API, in this process or another) until the profile's timeout denies it,
and appends every decision to the hash-chained audit log."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdeck.core.agent import Agent, AgentSource
from agentdeck.core.approvals import Approval, ApprovalState, GrantScope, answer_state
from agentdeck.core.audit import AuditRecord
from agentdeck.core.events import PermissionRequested, PermissionResolved
from agentdeck.core.policy import Decision, Grant, Profile, Rule, Verdict, decide, rule_for
from agentdeck.core.policy_inherit import meet
from agentdeck.core.policy_profile import with_own_rules
from agentdeck.core.policy_rules import Origin
from agentdeck.core.profile_ref import names_a_file
from agentdeck.errors import AgentdeckError, InvalidState, NotFound, PolicyError, StoreError
from agentdeck.governance.profiles import load_guarded
from agentdeck.settings import Settings
from agentdeck.store.approvals import ApprovalStore
from agentdeck.store.store import Store

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.25
GONE_BY = "agentdeck"  # who closed a request whose agent went away
Waiting = Callable[[bool], Awaitable[None]]
# agentdeck's own orchestration tools (the in-process ``deck`` MCP server): the
# tree's limits govern them; a profile can still deny or ask for them by name.
DECK_TOOLS = Rule.parse("mcp__deck").by(Origin.deck("(agentdeck's own tools)"))
# How an agent with an output schema gives its result (core.output_schema): Claude
# Code offers it only then; it records the result and does nothing else.
STRUCTURED_OUTPUT = Rule.parse("StructuredOutput").by(Origin.deck("(agentdeck's: its output)"))
_STRICTNESS = {Decision.DENY: 2, Decision.ASK: 1, Decision.ALLOW: 0}
MAX_ANCESTORS = 64  # far past any allowed depth: a cycle in bad data cannot loop
MAX_REMEMBERED = 10_000  # children whose inherited profile is kept (recomputed if dropped)


@dataclass(frozen=True)
class Outcome:
    allowed: bool
    reason: str
    rule: str | None
    by: str  # "policy", "grant", "user:<channel>", "timeout"
    approval_id: str | None = None


class Governor:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.approvals = ApprovalStore(store)
        self._profiles: dict[str, Profile] = {}
        # A child's parent's effective profile (``inherit``), by the child's id.
        self._above: OrderedDict[str, Profile] = OrderedDict()
        self._waiters: dict[str, asyncio.Future[Approval]] = {}

    # -- policy ------------------------------------------------------------------

    def profile_for(self, agent: Agent, *, tools: bool = True, deck: bool | None = None) -> Profile:
        """The profile the agent runs under: its own (``own_profile``), met with its
        parent's effective one once ``inherit`` has looked its ancestors up (a
        child's session does before it starts: its sandbox and budgets come from
        here)."""
        own = self.own_profile(agent, tools=tools, deck=deck)
        above = self._above.get(agent.id)
        if above is None:
            return own
        self._above.move_to_end(agent.id)
        return meet(above, own)

    async def inherit(self, agent: Agent) -> Profile:
        """The agent's effective profile: its own met with every ancestor's
        profile, the root's first (``core.policy_inherit``); remembered for
        ``profile_for``. An ancestor's own ``--allow`` / ``--deny`` rules are left
        to ``verdict``, which judges each call under them too and says whose
        rule it was."""
        if agent.parent_id and agent.id not in self._above:
            above: Profile | None = None
            for ancestor in reversed(await self.ancestors(agent)):
                if above is not None and ancestor.id not in self._above:
                    self._remember(ancestor.id, above)
                own = self.own_profile(ancestor, tools=False, deck=True, rules=False)
                above = own if above is None else meet(above, own)
            if above is not None:
                self._remember(agent.id, above)
        return self.profile_for(agent)

    def _remember(self, agent_id: str, above: Profile) -> None:
        self._above[agent_id] = above
        while len(self._above) > MAX_REMEMBERED:
            self._above.popitem(last=False)

    def own_profile(
        self, agent: Agent, *, tools: bool = True, deck: bool | None = None, rules: bool = True
    ) -> Profile:
        """The agent's profile, with its own ``--allow`` / ``--deny`` rules on top
        (unless ``rules`` is false), its template's tool list as the tools it has
        (unless ``tools`` is false: an orchestrator's own tool list does not bound
        what its children may use), and the deck's tools allowed (after every deny
        and ask rule, so a profile can still refuse them)."""
        base = self.profile_named(agent.spec.profile or self.settings.profile)
        # Only agents agentdeck runs have the deck's server; a hand-started
        # session's own server of that name is judged like any other. As an
        # ancestor judging its child's call, any agent lets the deck's tools be.
        if deck is None:
            deck = agent.source is AgentSource.AGENTDECK
        return with_own_rules(
            base, agent.id, allow=agent.spec.allow if rules else (),
            deny=agent.spec.deny if rules else (), tools=agent.spec.tools if tools else (),
            template=agent.spec.template, deck=(DECK_TOOLS, STRUCTURED_OUTPUT) if deck else (),
        )  # fmt: skip

    async def ancestors(self, agent: Agent) -> list[Agent]:
        """The agent's parent, its parent's parent, … (nearest first)."""
        chain: list[Agent] = []
        seen = {agent.id}
        parent_id = agent.parent_id
        while parent_id and parent_id not in seen and len(chain) < MAX_ANCESTORS:
            seen.add(parent_id)
            try:
                parent = await self.store.get_agent(parent_id)
            except NotFound:
                break
            chain.append(parent)
            parent_id = parent.parent_id
        return chain

    async def verdict(
        self,
        agent: Agent,
        tool: str,
        tool_input: dict[str, Any],
        grants: list[Grant],
        home: str | None = None,
    ) -> Verdict:
        """The policy's verdict for the agent, never more than any ancestor's: a
        child runs under its own profile AND every ancestor's rules (its profile,
        its --allow / --deny), the strictest answer wins (deny > ask > allow).
        Paths are judged in the child's workspace; ``~`` in ``home`` (the user's)."""
        home = home or str(Path.home())
        verdict = decide(
            self.profile_for(agent), tool, tool_input, workspace=agent.cwd, home=home, grants=grants
        )
        for ancestor in await self.ancestors(agent) if agent.parent_id else []:
            if verdict.decision is Decision.DENY:
                break
            theirs = grants + await self.grants(ancestor)
            above = self.profile_for(ancestor, tools=False, deck=True)
            other = decide(above, tool, tool_input, workspace=agent.cwd, home=home, grants=theirs)
            if _STRICTNESS[other.decision] > _STRICTNESS[verdict.decision]:
                verdict = dataclasses.replace(
                    other, reason=f"{other.reason} (the rules of its parent {ancestor.name})"
                )
        return verdict

    def profile_named(self, name: str | None = None) -> Profile:
        """A profile, loaded once, the deck's secrets denied in it
        (``profiles.guarded``); by default the one of agents that name none (and
        of hand-started sessions)."""
        name = name or self.settings.profile
        if name not in self._profiles:
            self._profiles[name] = load_guarded(name, self.settings)
        return self._profiles[name]

    def grant_key(self, agent: Agent) -> str:
        """Grants follow the agent's template and profile, never its display name. A
        profile file is its name and its path: two projects' ``.agentdeck/mine.yaml``
        share no grants, nor does a file with a built-in one."""
        ref = agent.spec.profile or self.settings.profile
        own = self.profile_named(ref)
        profile = f"profile:{own.name}"
        if names_a_file(ref):
            profile += f"@{own.source}"
        return f"template:{agent.spec.template}/{profile}" if agent.spec.template else profile

    async def grants(self, agent: Agent) -> list[Grant]:
        """The remembered answers that apply to ``agent`` (its own and its grant key's)."""
        records = await self.approvals.grants_for(self.grant_key(agent), agent.id)
        return [Grant(rule=g.rule, decision=Decision(g.decision)) for g in records]

    async def authorize(
        self,
        agent: Agent,
        tool: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        *,
        waiting: Waiting,
    ) -> Outcome:
        profile = self.profile_for(agent)
        verdict = await self.verdict(agent, tool, tool_input, await self.grants(agent))
        if verdict.decision is not Decision.ASK:
            by = "grant" if verdict.source == "grant" else "policy"
            outcome = Outcome(verdict.decision is Decision.ALLOW, verdict.reason, verdict.rule, by)
            # Queued before the answer, in order with every write after it (the
            # call's own events); Claude Code runs the call while it commits.
            self.audit(
                agent, tool, tool_input, str(verdict.decision), verdict.reason, verdict.rule, by
            )
            if not outcome.allowed:
                await self.store.append(
                    [
                        PermissionResolved(
                            agent_id=agent.id,
                            ts=time.time(),
                            request_id=tool_use_id or "-",
                            decision="deny",
                            reason=outcome.reason,
                            rule=outcome.rule,
                            by=by,
                        )
                    ]
                )
            return outcome
        return await self._ask(
            agent, profile, tool, tool_input, tool_use_id, verdict.reason, verdict.rule, waiting
        )

    # -- asking --------------------------------------------------------------------

    async def open_request(
        self,
        agent: Agent,
        tool: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        reason: str,
        rule: str | None,
        *,
        seconds: float,
        by: str,
    ) -> Approval:
        """A pending request in the approval inbox for ``seconds``, audited as asked
        (the store scrubs what it keeps)."""
        now = time.time()
        approval = await self.approvals.create(
            Approval(
                id="ap" + secrets.token_hex(6),
                agent_id=agent.id,
                tool=tool,
                input=tool_input,
                reason=reason,
                grant_key=self.grant_key(agent),
                state=ApprovalState.PENDING,
                created_at=now,
                expires_at=now + seconds,
                tool_use_id=tool_use_id,
                rule=rule,
            )
        )
        await self.audit(agent, tool, tool_input, "ask", reason, rule, by)
        return approval

    async def _ask(
        self,
        agent: Agent,
        profile: Profile,
        tool: str,
        tool_input: dict[str, Any],
        tool_use_id: str | None,
        reason: str,
        rule: str | None,
        waiting: Waiting,
    ) -> Outcome:
        approval = await self.open_request(
            agent, tool, tool_input, tool_use_id, reason, rule,
            seconds=profile.approval_timeout_seconds, by="policy",
        )  # fmt: skip
        now = approval.created_at
        await self.store.append(
            [
                PermissionRequested(
                    agent_id=agent.id,
                    ts=now,
                    request_id=approval.id,
                    tool=tool,
                    input=tool_input,
                    reason=reason,
                )
            ]
        )
        await waiting(True)
        try:
            answered = await self.wait_answer(approval)
        except asyncio.CancelledError:
            # The agent went away first (killed, stopped, its process gone): the
            # request is closed and the audit log says how, not left at "ask".
            why = "the agent stopped before the request was answered: the call did not run"
            await asyncio.shield(self.close_request(agent, approval, tool_input, why, GONE_BY))
            raise
        finally:
            await waiting(False)
        allowed = answered.state.allows
        if answered.state == ApprovalState.EXPIRED:
            why = (
                f"nobody answered the approval request within "
                f"{profile.approval_timeout_seconds:.0f}s: denied"
            )
        elif allowed:
            why = answered.message or f"approved by {answered.answered_by}"
        else:
            why = answered.message or f"denied by {answered.answered_by}"
        outcome = Outcome(allowed, why, rule, answered.answered_by or "timeout", approval.id)
        await self.store.append(
            [
                PermissionResolved(
                    agent_id=agent.id,
                    ts=time.time(),
                    request_id=approval.id,
                    decision="allow" if allowed else "deny",
                    reason=why,
                    rule=rule,
                    by=outcome.by,
                )
            ]
        )
        await self.audit(agent, tool, tool_input, str(answered.state), why, rule, outcome.by)
        return outcome

    async def close_request(
        self, agent: Agent, approval: Approval, tool_input: dict[str, Any], why: str, by: str
    ) -> None:
        """Cancel a request nobody waits for any more, audited so (not left at "ask")."""
        try:
            closed = await self.approvals.decide(
                approval.id, ApprovalState.CANCELLED, by=by, message=why
            )
            if closed is not None:  # not answered meanwhile (by another process)
                record = AuditRecord.for_input(
                    agent_id=agent.id, tool=approval.tool, tool_input=tool_input,
                    decision=str(ApprovalState.CANCELLED), reason=why, ts=time.time(),
                    rule=approval.rule, answered_by=by,
                )  # fmt: skip
                await self.store.append_audit(record)
        except StoreError as exc:
            # The deck stopped first (its store is closed: the SDK cancels the wait
            # late) or cannot write: the request stays pending and expires as any.
            logger.info("approval request %s left pending: %s", approval.id, exc)
        except Exception:
            logger.exception("could not close approval request %s", approval.id)

    async def wait_answer(self, approval: Approval) -> Approval:
        """The request once answered, or expired at its deadline (from this
        process at once, from another within ``POLL_SECONDS``)."""
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        self._waiters[approval.id] = future
        try:
            return await self._wait(approval, future)
        finally:
            self._waiters.pop(approval.id, None)

    async def _wait(self, approval: Approval, future: asyncio.Future[Approval]) -> Approval:
        """The answer: from this process (the future) or another (the row)."""
        while True:
            remaining = approval.expires_at - time.time()
            if remaining <= 0:
                expired = await self.approvals.decide(
                    approval.id, ApprovalState.EXPIRED, by="timeout"
                )
                return expired or await self.approvals.get(approval.id)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(POLL_SECONDS, remaining)):
                    return await asyncio.shield(future)
            current = await self.approvals.get(approval.id)
            if not current.state.is_open:
                return current

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        by: str,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        """Answer a pending request: allow / deny, optionally remembered."""
        approval = await self.approvals.find(ref)
        if not approval.state.is_open:
            raise InvalidState(
                approval.id, approval.state, "answer it again", noun="approval request"
            )
        grant_rule = None
        if remember is not None:
            agent = await self.store.get_agent(approval.agent_id)
            try:
                grant_rule = rule_for(
                    approval.tool, approval.input, agent.cwd, home=str(Path.home())
                )
            except PolicyError as exc:
                # No rule could allow it again (e.g. a computed program name):
                # answer this call only, and say so.
                remember = None
                note = f"answered once: no rule can remember it ({exc.problem})"
                message = f"{message} ({note})" if message else note
        decided = await self.approvals.decide(
            approval.id,
            answer_state(decision),
            by=by,
            message=message,
            remember=remember,
            grant_rule=grant_rule,
        )
        if decided is None:
            current = await self.approvals.get(approval.id)
            raise InvalidState(
                approval.id, current.state, "answer it again", noun="approval request"
            )
        future = self._waiters.get(decided.id)
        if future is not None and not future.done():
            future.set_result(decided)
        return decided

    def is_waiting(self, approval_id: str) -> bool:
        """Whether an agent in this process is blocked on this request."""
        return approval_id in self._waiters

    async def expire_orphans(self) -> list[Approval]:
        """Requests past their deadline that nobody waits for any more (their
        agent's process died) are denied as expired, so none stays open forever."""
        now = time.time()
        expired = []
        for approval in await self.approvals.list_approvals(limit=1000):
            if approval.expires_at <= now and not self.is_waiting(approval.id):
                done = await self.approvals.decide(approval.id, ApprovalState.EXPIRED, by="timeout")
                if done is not None:
                    expired.append(done)
        return expired

    def audit(
        self,
        agent: Agent,
        tool: str,
        tool_input: dict[str, Any],
        decision: str,
        reason: str,
        rule: str | None,
        by: str | None,
    ) -> asyncio.Future[None]:
        """Queue a decision for the audit log now, in order with every later write;
        await the future for its commit (or, if the store cannot take it: closed, a
        full disk, for the one error line naming the call). It never raises."""
        record = AuditRecord.for_input(
            agent_id=agent.id,
            tool=tool,
            tool_input=tool_input,
            decision=decision,
            reason=reason,
            ts=time.time(),
            rule=rule,
            answered_by=by,
        )
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            queued = self.store.queue_audit(record)
        except AgentdeckError as exc:  # a closed store
            _audit_failed(tool, decision, exc)
            done.set_result(None)
            return done

        def settled(future: asyncio.Future[Any]) -> None:
            if not future.cancelled() and future.exception() is not None:
                _audit_failed(tool, decision, future.exception())
            if not done.done():
                done.set_result(None)

        queued.add_done_callback(settled)
        return done


def _audit_failed(tool: str, decision: str, exc: BaseException | None) -> None:
    if isinstance(exc, AgentdeckError):  # known (a closed store, a full disk): one line
        logger.error("could not append to the audit log (%s %s): %s", tool, decision, exc)
    else:
        logger.error("could not append to the audit log (%s %s)", tool, decision, exc_info=exc)
