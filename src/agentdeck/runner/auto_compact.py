"""A template's ``auto_compact_at``: an idle keep-alive agent whose last turn's
context passed it is sent Claude Code's ``/compact`` (as ``Deck.compact`` does),
once, with a notice saying why. The decision is ``core.compaction.AutoCompaction``.

It is decided when the turn's result is read, before the agent is shown idle: the
agent stays ``running`` and the ``/compact`` goes to Claude Code right after the
result is committed, so a follow-up sent meanwhile is queued behind the compaction
(Claude Code answers its input in order) and ``Deck.compact`` is not offered an
idle agent it would compact twice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agentdeck.core.compaction import (
    AUTO_COMPACT,
    BOUNDARY,
    COMMAND,
    AutoCompaction,
    auto_compact_reason,
    compaction,
)
from agentdeck.core.events import Event, Notice, TurnCompleted, UserMessageSent

__all__ = ["AutoCompactor"]


class AutoCompactor:
    """One session's view of its compactions (None threshold: it never compacts)."""

    def __init__(self, agent_id: str, threshold: int | None) -> None:
        self.agent_id = agent_id
        self.decision = AutoCompaction(threshold) if threshold else None

    def observe(self, events: Sequence[Event], *, between_turns: bool) -> list[Event]:
        """What one message mapped to, seen. Returns the events of a compaction to
        start now (a notice saying why, the ``/compact`` sent), or nothing.
        ``between_turns``: the turn ended and the agent would be idle (a keep-alive
        session, not stopping, its result not an error nor retried)."""
        decision = self.decision
        if decision is None:
            return []
        context: int | None = None
        for event in events:
            if isinstance(event, Notice) and event.kind == BOUNDARY:
                detail: Any = event.detail
                decision.boundary(compaction({"detail": detail})["post_tokens"])
            elif isinstance(event, TurnCompleted):
                context = event.input_tokens
        if context is None:
            return []
        if not decision.turn_ended(context, idle=between_turns):
            return []
        now = time.time()
        reason = auto_compact_reason(context, decision.threshold)
        return [
            Notice(
                agent_id=self.agent_id,
                ts=now,
                kind=AUTO_COMPACT,
                message=reason,
                detail={"context_tokens": context, "auto_compact_at": decision.threshold},
            ),
            UserMessageSent(agent_id=self.agent_id, ts=now, text=COMMAND),
        ]
