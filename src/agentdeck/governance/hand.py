"""Governance of Claude Code sessions started by hand (their PreToolUse hook).

The verdict is ``core.policy_hand``'s: under ``deny-and-ask`` (the default)
only the profile's deny and ask rules speak, and where neither matches the hook
gives no decision, so Claude Code's own permission rules decide. A call the
profile asks about goes to the deck's one approval inbox (the dashboard, the
CLI, chat, the API), like an agent's, with a short deadline
(``AGENTDECK_HOOK_APPROVAL_SECONDS``: the hook runs under Claude Code's 60 s
timeout); unanswered, the hook answers "ask" and Claude Code shows its own
prompt. Nothing is remembered of an expired request. Every decision made here
is audited; a call left to Claude Code is not (agentdeck did not decide it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdeck.core.agent import Agent
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.policy import Decision, Verdict
from agentdeck.core.policy_hand import HookGovernance, hand_verdict
from agentdeck.governance.governor import Governor

# A tool input larger than this (as JSON) is not put before a person: the hook
# answers "ask" at once and Claude Code's own prompt shows the call.
MAX_ASK_INPUT = 64 * 1024


@dataclass(frozen=True)
class HandAnswer:
    """What the hook answers after asking: allow, deny, or ask (Claude Code's prompt)."""

    decision: str
    reason: str
    by: str


class HandGovernance:
    """The hook's view of a ``Governor`` for sessions started by hand."""

    def __init__(self, governor: Governor) -> None:
        self.governor = governor
        settings = governor.settings
        self.governance = HookGovernance(settings.hook_governance)
        self.approval_seconds = settings.hook_approval_seconds

    async def judge(self, agent: Agent, tool: str, tool_input: dict[str, Any]) -> Verdict | None:
        """The verdict for one call, or None: no decision. Audited unless None or
        ask (an ask is audited when it is put to a person, and when answered)."""
        gov = self.governor
        grants = await gov.grants(agent)
        verdict = hand_verdict(
            gov.profile_for(agent),
            tool,
            tool_input,
            workspace=agent.cwd,
            home=str(Path.home()),
            grants=grants,
            governance=self.governance,
        )
        if verdict is not None and verdict.decision is not Decision.ASK:
            by = "grant" if verdict.source == "grant" else "hook"
            await gov.audit(
                agent, tool, tool_input, str(verdict.decision), verdict.reason, verdict.rule, by
            )
        return verdict

    @staticmethod
    def askable(tool_input: dict[str, Any]) -> bool:
        """Whether the input is small enough to put before a person."""
        try:
            size = len(json.dumps(tool_input, ensure_ascii=False, default=str))
        except (ValueError, RecursionError):
            return False
        return size <= MAX_ASK_INPUT

    async def request(
        self, agent: Agent, tool: str, tool_input: dict[str, Any], use_id: str, verdict: Verdict
    ) -> Approval:
        """A pending request in the approval inbox (the store scrubs what it keeps)."""
        return await self.governor.open_request(
            agent, tool, tool_input, use_id, verdict.reason, verdict.rule,
            seconds=self.approval_seconds, by="hook",
        )  # fmt: skip

    async def wait(
        self, agent: Agent, approval: Approval, tool_input: dict[str, Any]
    ) -> HandAnswer:
        """The person's answer, or "ask" at the deadline (audited)."""
        gov = self.governor
        answered = await gov.wait_answer(approval)
        by = answered.answered_by or "timeout"
        if answered.state is ApprovalState.EXPIRED:
            answer = HandAnswer(
                "ask",
                f"nobody answered the approval request within {self.approval_seconds:g} s: "
                "Claude Code asks",
                "timeout",
            )
        elif answered.state.allows:
            answer = HandAnswer("allow", answered.message or f"approved by {by}", by)
        else:
            answer = HandAnswer("deny", answered.message or f"{answered.state} by {by}", by)
        await gov.audit(
            agent,
            approval.tool,
            tool_input,
            str(answered.state),
            answer.reason,
            approval.rule,
            answer.by,
        )
        return answer

    async def cancel(self, agent: Agent, approval: Approval, tool_input: dict[str, Any]) -> None:
        """Nobody waits for the request any more (the hook client went away)."""
        why = "the hook went away before the request was answered: Claude Code decides"
        await self.governor.close_request(agent, approval, tool_input, why, "hook")
