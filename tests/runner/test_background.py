"""runner.background: when a one-shot session's input may close, message by message."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage, SystemMessage
from claude_agent_sdk.types import (
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
)

from agentdeck.runner.background import BackgroundTasks


def started(task_id: str, task_type: str, *, background: bool = True) -> TaskStartedMessage:
    data = {"task_id": task_id, "task_type": task_type, "is_backgrounded": background}
    return TaskStartedMessage(
        subtype="task_started", data=data, task_id=task_id, description="d", uuid="u",
        session_id="s", task_type=task_type,
    )  # fmt: skip


def notified(task_id: str) -> TaskNotificationMessage:
    return TaskNotificationMessage(
        subtype="task_notification", data={}, task_id=task_id, status="completed",
        output_file="", summary="", uuid="u", session_id="s",
    )  # fmt: skip


def updated(task_id: str, status: str) -> TaskUpdatedMessage:
    patch = {"status": status}
    return TaskUpdatedMessage(
        subtype="task_updated", data={"patch": patch}, task_id=task_id, patch=patch,
        status=status,  # type: ignore[arg-type]
    )  # fmt: skip


def listed(*tasks: tuple[str, str]) -> SystemMessage:
    data: dict[str, Any] = {"tasks": [{"task_id": i, "task_type": t} for i, t in tasks]}
    return SystemMessage(subtype="background_tasks_changed", data=data)


def result(origin: dict[str, Any] | None = None) -> ResultMessage:
    return ResultMessage(
        subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
        session_id="s", origin=origin,  # type: ignore[arg-type]
    )  # fmt: skip


def init() -> SystemMessage:
    return SystemMessage(subtype="init", data={})


NOTIFICATION_TURN = {"kind": "task-notification", "producer": "session-task"}


def feed(*messages: object) -> BackgroundTasks:
    tasks = BackgroundTasks()
    for message in messages:
        tasks.see(message)
    return tasks


def test_nothing_in_the_background_holds_nothing() -> None:
    tasks = feed(init())
    assert tasks.holds_input  # the turn is under way
    tasks.see(result())
    assert not tasks.holds_input


def test_a_background_subagent_holds_the_input_until_its_report_is_told() -> None:
    # The order the CLI printed it in (claude-code-protocol.md §6.6).
    tasks = feed(init(), listed(("a1", "local_agent")), started("a1", "local_agent"), result())
    assert tasks.holds_input  # the parent's turn is over, the subagent is not
    for message in (updated("a1", "completed"), notified("a1"), listed(), init()):
        tasks.see(message)
    assert tasks.holds_input  # the turn that tells the model is owed, then under way
    tasks.see(result(NOTIFICATION_TURN))
    assert not tasks.holds_input


def test_a_subagent_that_ends_before_the_parents_result_still_owes_its_turn() -> None:
    tasks = feed(started("a1", "local_agent"), notified("a1"), listed(), result())
    assert tasks.holds_input
    tasks.see(result(NOTIFICATION_TURN))
    assert not tasks.holds_input


def test_a_foreground_subagent_owes_no_turn() -> None:
    assert not feed(
        started("a1", "local_agent", background=False), notified("a1"), result()
    ).holds_input


def test_a_background_shell_holds_the_input_until_its_report_is_told() -> None:
    # Claude Code waits for it anyway; the turn that reports it may call tools.
    tasks = feed(listed(("b1", "local_bash")), started("b1", "local_bash"), result())
    assert tasks.holds_input
    for message in (notified("b1"), listed(), result(NOTIFICATION_TURN)):
        tasks.see(message)
    assert not tasks.holds_input


def test_a_task_stopped_without_a_notification_owes_nothing() -> None:
    tasks = feed(init(), started("a1", "local_agent"), result())
    assert tasks.holds_input
    tasks.see(updated("a1", "killed"))  # a notification may still come
    assert tasks.holds_input
    tasks.see(listed())  # none did: no turn is owed, the input may end now
    assert not tasks.holds_input


def test_the_clis_list_is_the_truth() -> None:
    tasks = feed(listed(("a1", "local_agent")))  # its task_started was not seen
    assert tasks.holds_input
    tasks.see(listed())
    assert not tasks.holds_input
