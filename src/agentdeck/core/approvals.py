"""Approval requests: a tool call the policy said to ask a person about.

``pending → allowed | denied | expired | cancelled``. An unanswered request is
denied at its deadline — never allowed. An answer may be remembered as a grant,
for the rest of the agent's session or persistently, keyed by the agent's
template or profile plus the rule — never by a reusable display name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ApprovalState(StrEnum):
    PENDING = "pending"
    ALLOWED = "allowed"
    DENIED = "denied"
    EXPIRED = "expired"  # nobody answered in time: denied
    CANCELLED = "cancelled"  # the agent went away before an answer

    @property
    def is_open(self) -> bool:
        return self is ApprovalState.PENDING

    @property
    def allows(self) -> bool:
        return self is ApprovalState.ALLOWED


class GrantScope(StrEnum):
    SESSION = "session"  # this agent, until it ends
    PERSISTENT = "persistent"  # every agent with the same grant key, from now on


@dataclass(frozen=True)
class Approval:
    id: str
    agent_id: str
    tool: str
    input: dict[str, Any]
    reason: str
    grant_key: str
    state: ApprovalState
    created_at: float
    expires_at: float
    tool_use_id: str | None = None
    rule: str | None = None  # the rule that asked, if any
    answered_at: float | None = None
    answered_by: str | None = None
    message: str | None = None  # for the agent, with the answer
    remember: str | None = None  # the grant scope the answer asked for

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "tool": self.tool,
            "input": self.input,
            "reason": self.reason,
            "grant_key": self.grant_key,
            "state": str(self.state),
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "tool_use_id": self.tool_use_id,
            "rule": self.rule,
            "answered_at": self.answered_at,
            "answered_by": self.answered_by,
            "message": self.message,
            "remember": self.remember,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Approval:
        return cls(**{**data, "state": ApprovalState(data["state"])})


@dataclass(frozen=True)
class GrantRecord:
    """A remembered answer: ``rule`` allowed or denied under ``grant_key``."""

    grant_key: str
    rule: str
    decision: str  # "allow" | "deny"
    scope: GrantScope
    agent_id: str | None
    created_at: float
    created_by: str | None = None


def answer_state(decision: str) -> ApprovalState:
    if decision == "allow":
        return ApprovalState.ALLOWED
    if decision == "deny":
        return ApprovalState.DENIED
    raise ValueError(f"an answer is 'allow' or 'deny', not {decision!r}")
