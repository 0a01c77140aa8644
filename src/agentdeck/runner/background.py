"""What a one-shot session's Claude Code still does in the background.

An ``agentdeck run`` ends its agent's input at the turn's result. A background
task outlives that result: a subagent (the ``Agent`` tool runs in the background
by default) whose tool calls still ask the host (the permission callback,
PreToolUse), or a shell started with ``run_in_background``. When one ends, the
CLI plays one more parent turn to tell the model (a result whose ``origin`` is a
task notification), whose calls ask the host too. With the host's input closed
those answers can no longer reach the CLI, which refuses the call ("The user
doesn't want to take this action right now").

``BackgroundTasks`` reads the session's messages and says whether the input must
stay open: while a turn is under way (each begins with ``system/init`` and ends
with its result), while a background task runs, or while the turn that reports
a finished one is still owed. (Claude Code waits for its background tasks before
it exits whether its input is open or not, a shell that never ends included:
keeping it open costs no wait of its own.) Pure: no I/O, fed one message at a
time. It imports the SDK at module level: only a session imports it, when it is
made (``SessionState``), never the runner.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage, SystemMessage
from claude_agent_sdk.types import (
    TaskNotificationMessage,
    TaskStartedMessage,
)


class BackgroundTasks:
    def __init__(self) -> None:
        self._running: set[str] = set()  # the background tasks' ids
        self._background: set[str] = set()  # every background task's id (not foreground ones)
        self._owed = False  # a finished background task's notification turn is to come
        self._in_turn = False  # a turn began (system/init) and has no result yet

    @property
    def holds_input(self) -> bool:
        """The CLI may still ask the host something: its input must stay open."""
        return self._in_turn or self._owed or bool(self._running)

    def see(self, message: object) -> None:
        if isinstance(message, ResultMessage):
            self._in_turn = False
            if _origin_kind(message.origin) == "task-notification":
                self._owed = False
        elif isinstance(message, TaskStartedMessage):
            if message.data.get("is_backgrounded"):
                self._background.add(message.task_id)
                self._running.add(message.task_id)
        elif isinstance(message, TaskNotificationMessage):
            # A background task's notification is told the model in a turn of its
            # own; a foreground one's comes back as its tool's result.
            self._running.discard(message.task_id)
            self._owed = self._owed or message.task_id in self._background
        elif isinstance(message, SystemMessage) and message.subtype == "init":
            self._in_turn = True
        elif isinstance(message, SystemMessage) and message.subtype == "background_tasks_changed":
            self._listed(message.data.get("tasks"))

    def _listed(self, tasks: Any) -> None:
        """The CLI's own list of what runs in the background now: it drops a task
        after the task's notification, and a task stopped without one. (A
        ``task_updated`` to an end comes before the notification: the turn it
        owes is not known yet then.)"""
        if not isinstance(tasks, list):
            return
        listed = {str(t["task_id"]) for t in tasks if isinstance(t, dict) and t.get("task_id")}
        self._background.update(listed)
        self._running = listed


def _origin_kind(origin: Any) -> str | None:
    if isinstance(origin, dict):
        kind = origin.get("kind")
        return kind if isinstance(kind, str) else None
    return getattr(origin, "kind", None)
