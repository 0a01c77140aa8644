"""What names an event and how the log holds one: ``EventType`` and ``StoredEvent``.

Apart from ``core.events`` (the typed events, one dataclass each), so that what
only reads the log (the CLI printing it) does not build every event class.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    AGENT_SPAWNED = "agent_spawned"
    STATE_CHANGED = "state_changed"
    USER_MESSAGE_SENT = "user_message_sent"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_CALLED = "tool_called"
    TOOL_RETURNED = "tool_returned"
    PERMISSION_REQUESTED = "permission_requested"
    PERMISSION_RESOLVED = "permission_resolved"
    COST_UPDATED = "cost_updated"
    TURN_COMPLETED = "turn_completed"
    ERROR_OCCURRED = "error_occurred"
    NOTICE = "notice"  # retries, hook output, anything informational from the CLI
    HOOK_RECEIVED = "hook_received"
    OBSERVATION_RECORDED = "observation_recorded"
    SANDBOX_BLOCKED = "sandbox_blocked"
    QUESTION_ASKED = "question_asked"
    QUESTION_ANSWERED = "question_answered"
    BUDGET_WARNING = "budget_warning"  # a daily budget is 80 % spent (once a day each)


@dataclass(frozen=True)
class StoredEvent:
    """An event as the log holds it: with its monotonic id."""

    id: int
    agent_id: str
    type: str
    ts: float
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent_id": self.agent_id,
            "type": self.type,
            "ts": self.ts,
            "data": self.data,
        }
