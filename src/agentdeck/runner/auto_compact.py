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
    AUTO_COMPACT_SKIPPED,
    BOUNDARY,
    COMMAND,
    AutoCompactAt,
    AutoCompaction,
    auto_compact_reason,
    auto_compact_skipped,
    compaction,
    context_window,
    is_share,
)
from agentdeck.core.events import Event, Notice, TurnCompleted, UserMessageSent

__all__ = ["AutoCompactor"]


class AutoCompactor:
    """One session's view of its compactions (None ``at``: it never compacts)."""

    def __init__(self, agent_id: str, at: AutoCompactAt | None) -> None:
        self.agent_id = agent_id
        self.decision = AutoCompaction(at) if at else None
        self.model: str | None = None  # the model its main thread last answered with
        self._said_skipped = False
        self._notices: list[Event] = []  # said, not a compaction: ``notices``

    def observe(
        self, events: Sequence[Event], *, between_turns: bool, message: object = None
    ) -> list[Event]:
        """What one ``message`` mapped to, seen. Returns the events of a compaction
        to start now (a notice saying why, the ``/compact`` sent), or nothing.
        ``between_turns``: the turn ended and the agent would be idle (a keep-alive
        session, not stopping, its result not an error nor retried)."""
        decision = self.decision
        if decision is None:
            return []
        self._saw_model(message)
        context: int | None = None
        for event in events:
            if isinstance(event, Notice) and event.kind == BOUNDARY:
                detail: Any = event.detail
                decision.boundary(compaction({"detail": detail})["post_tokens"])
            elif isinstance(event, TurnCompleted):
                context = event.input_tokens
        if context is None:
            return []
        window = context_window(getattr(message, "model_usage", None), self.model)
        if not decision.turn_ended(context, idle=between_turns, window=window):
            if decision.threshold is None:
                self._skipped()
            return []
        now = time.time()
        threshold = decision.threshold
        assert threshold is not None  # it fired on one
        reason = auto_compact_reason(context, decision.at, window)
        detail = {"context_tokens": context, "auto_compact_at": threshold}
        if is_share(decision.at):
            detail.update(share=decision.at, context_window=window)
        return [
            Notice(
                agent_id=self.agent_id, ts=now, kind=AUTO_COMPACT, message=reason, detail=detail
            ),
            UserMessageSent(agent_id=self.agent_id, ts=now, text=COMMAND),
        ]

    def _saw_model(self, message: object) -> None:
        """The turn's model: its main thread's assistant messages name it (Claude
        Code's init names the session's before any)."""
        model = getattr(message, "model", None)
        if isinstance(model, str) and getattr(message, "parent_tool_use_id", None) is None:
            self.model = model
            return
        data = getattr(message, "data", None)
        if getattr(message, "subtype", None) == "init" and isinstance(data, dict):
            named = data.get("model")
            if isinstance(named, str) and self.model is None:
                self.model = named

    def notices(self) -> list[Event]:
        """What is to be said that starts no compaction (once: a share not applied
        for want of a window), taken."""
        said, self._notices = self._notices, []
        return said

    def _skipped(self) -> None:
        """A share with no window reported: said once, never guessed."""
        decision = self.decision
        if decision is None or self._said_skipped or not is_share(decision.at):
            return
        self._said_skipped = True
        self._notices.append(
            Notice(
                agent_id=self.agent_id,
                ts=time.time(),
                kind=AUTO_COMPACT_SKIPPED,
                message=auto_compact_skipped(float(decision.at)),
                detail={"share": decision.at},
            )
        )
