"""What a one-shot session's Claude Code still does in the background.

An ``agentdeck run`` ends its agent's input at the turn's result. A background
subagent (the ``Agent`` tool runs in the background by default) outlives that
result: its tool calls still ask the host (the permission callback, PreToolUse),
and with the host's input closed their answers can no longer reach the CLI, which
refuses the call ("The user doesn't want to take this action right now"). When
it ends, the CLI plays one more parent turn to tell the model (a result whose
``origin`` is a task notification), whose calls ask the host too.

``BackgroundTasks`` reads the session's messages and says whether the input must
stay open: while a background task that can ask is running (a subagent; a
background shell asks nothing once started and may run for ever, a server say),
or while the turn that reports a finished background task is still owed. Pure:
no I/O, fed one message at a time.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage, SystemMessage
from claude_agent_sdk.types import (
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
)

# Statuses that end a task (task_notification says stopped, task_updated killed).
_TERMINAL = frozenset({"completed", "failed", "stopped", "killed"})
# A background task that asks nothing once it runs.
_SILENT_TYPES = frozenset({"local_bash"})


class BackgroundTasks:
    def __init__(self) -> None:
        self._running: dict[str, str] = {}  # background task id -> its task_type
        self._background: set[str] = set()  # every background task's id (not foreground ones)
        self._owed = False  # a finished background task's notification turn is to come

    @property
    def holds_input(self) -> bool:
        """The CLI may still ask the host something: its input must stay open."""
        return self._owed or any(t not in _SILENT_TYPES for t in self._running.values())

    def see(self, message: object) -> None:
        if isinstance(message, ResultMessage):
            if _origin_kind(message.origin) == "task-notification":
                self._owed = False
        elif isinstance(message, TaskStartedMessage):
            if message.data.get("is_backgrounded"):
                self._background.add(message.task_id)
                self._running[message.task_id] = message.task_type or ""
        elif isinstance(message, TaskNotificationMessage):
            # A background task's notification is told the model in a turn of its
            # own; a foreground one's comes back as its tool's result.
            self._running.pop(message.task_id, None)
            self._owed = self._owed or message.task_id in self._background
        elif isinstance(message, TaskUpdatedMessage):
            if message.status in _TERMINAL:  # may come alone (no notification, no turn)
                self._running.pop(message.task_id, None)
        elif isinstance(message, SystemMessage) and message.subtype == "background_tasks_changed":
            self._listed(message.data.get("tasks"))

    def _listed(self, tasks: Any) -> None:
        """The CLI's own list of what runs in the background now."""
        if not isinstance(tasks, list):
            return
        listed = {
            str(t["task_id"]): str(t.get("task_type") or "")
            for t in tasks
            if isinstance(t, dict) and t.get("task_id")
        }
        self._background.update(listed)
        self._running = listed


def _origin_kind(origin: Any) -> str | None:
    if isinstance(origin, dict):
        kind = origin.get("kind")
        return kind if isinstance(kind, str) else None
    return getattr(origin, "kind", None)
