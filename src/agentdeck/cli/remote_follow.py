"""Following an agent the daemon runs: its events as they come, the stream resumed
after a drop, the turn that answers a message, and how it ended.

Part of the steering commands (``cli.remote``), cheap to start as they are:
records are the daemon's JSON, and nothing heavy is imported.
"""

from __future__ import annotations

from agentdeck import jsontext
from agentdeck.cli import out
from agentdeck.errors import AgentdeckError

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from typing import Any

    from agentdeck.client.quick import Daemon

# ``AgentState``'s values and its final ones (a test holds them equal: the enums'
# module would load ``enum`` and the dataclasses).
AGENT_STATES = (
    "queued", "starting", "running", "awaiting_permission", "awaiting_input", "awaiting_agents",
    "idle", "done", "error", "interrupted", "killed",
)  # fmt: skip
FINAL_STATES = frozenset({"done", "error", "interrupted", "killed"})
UNFINISHED = frozenset(AGENT_STATES) - FINAL_STATES  # live, or queued for a host
LIVE_STATES = UNFINISHED - {"queued"}  # a process is (or should be) attached


def print_event(event: dict[str, Any], as_json: bool) -> None:
    if as_json:
        out.say(jsontext.dumps(event))
        return
    from agentdeck.cli.render import event_line

    line = event_line(event)
    if line is not None:
        out.show(line)


def stream(
    d: Daemon, agent_id: str, after: int, *, partial: bool = False
) -> Iterator[dict[str, Any]]:
    """Events of one agent after ``after``, live, until the daemon ends the stream;
    with ``partial``, the edits of the text being written between them (``"type":
    "partial"``, no id: ``core.partial.PartialText``'s fields).

    When the daemon drops us for reading too slowly, reconnect from the position
    it reached: nothing is lost or repeated.
    """
    params = {"agent": agent_id, "partial": "true"} if partial else {"agent": agent_id}
    while True:
        position = None
        for kind, data in d.events("/api/events/stream", {**params, "after": after}):
            if kind == "dropped":
                position = int(jsontext.loads(data)["position"])
                break
            if kind == "partial":
                if partial:
                    yield {**jsontext.loads(data), "type": kind}
                continue
            event = jsontext.loads(data)
            after = int(event["id"])
            yield event
        if position is None:
            return  # the daemon ended the stream (shutting down)
        after = max(after, position)


def follow(
    d: Daemon,
    agent_id: str,
    *,
    after: int,
    as_json: bool,
    until_turn: bool,
    answer: AnswerTo | None = None,
) -> int:
    """Follow an agent the daemon runs: until its state is final, or (with
    ``until_turn``) until the turn in progress completes (with ``answer``, the turn
    that answers the message sent). Ctrl-C once interrupts the agent, twice kills
    it; the log is read on from where it was."""
    from agentdeck.cli import live_text

    presses = 0
    last_result: dict[str, Any] | None = None
    live = live_text.LiveText() if live_text.wanted(as_json) else None
    while True:
        try:
            for event in stream(d, agent_id, after, partial=live is not None):
                if live is not None and event["type"] == "partial":
                    live.partial(event)
                    continue
                after = int(event["id"])
                if not as_json and not (live is not None and live.event(event)):
                    print_event(event, as_json=False)
                answered = answer is None or answer.answered_by(event)
                if event["type"] == "turn_completed":
                    last_result = event["data"]
                    if until_turn and answered:
                        break
                if event["type"] == "state_changed" and event["data"]["new"] in FINAL_STATES:
                    break
            break
        except KeyboardInterrupt:
            if live is not None:
                live.close()
            presses += 1
            action = "interrupt" if presses == 1 else "kill"
            out.say("interrupting… (Ctrl-C again to kill)" if presses == 1 else "killing…")
            import contextlib  # here: its import would cost every command

            with contextlib.suppress(AgentdeckError):
                d.post(f"/api/agents/{agent_id}/{action}")
    if live is not None:
        live.close()
    return report(d.get(f"/api/agents/{agent_id}"), last_result, as_json)


class AnswerTo:
    """Which completed turn answers a message sent now, read off the agent's log.

    An idle agent answers it in the turn it starts. A busy one (Claude Code queues
    it) in the turn in progress if a tool result goes back to the model after it
    (Claude Code adds the message to that request), else in the next turn, with
    whatever else was queued."""

    def __init__(self, turn_running: bool) -> None:
        self.running = turn_running  # as far as the log has told
        self.sent = False  # the message is in the log
        self.ahead = False  # the turn it found running, still to complete
        self.fed = False  # a tool result went back to the model since it was sent

    def answered_by(self, event: dict[str, Any]) -> bool:
        kind = event["type"]
        if kind == "user_message_sent":
            if not self.sent:
                self.sent, self.ahead = True, self.running
            self.running = True
        elif kind == "tool_returned" and self.sent:
            self.fed = True
        elif kind == "turn_completed":
            self.running = False
            if self.ahead and not self.fed:
                self.ahead = False  # the earlier ask's answer; this one's is next
                return False
            return self.sent
        return False


def report(agent: dict[str, Any], last_result: dict[str, Any] | None, as_json: bool) -> int:
    """How a followed agent (its ``to_dict()``) ended; the exit code: 0 when its
    turn succeeded."""
    if as_json:
        out.print_json({"agent": agent, "result": last_result})
    else:
        from agentdeck.cli.styled import Line

        # The name as it is (Rich markup would have read a `[` in it).
        out.show(
            Line(
                f"agent {agent['id']} ({agent['name']}) {agent['state']} · "
                f"{agent.get('turns', 0)} turns · ${agent.get('cost_usd', 0.0):.4f}",
                "dim",
            )
        )
    if last_result is not None and last_result.get("is_error"):
        return 1
    return 0 if agent["state"] in {"done", "idle"} else 1


def turn_running(d: Daemon, agent: dict[str, Any], mark: int) -> bool:
    """Whether the agent's process, as the log stands at ``mark``, was sent a message
    (its first prompt too) it has not completed a turn for. Read back from ``mark``
    to the last completed turn or the process's start; a finished agent has none."""
    if agent["state"] in FINAL_STATES:
        return False
    before: int | None = mark + 1
    while before is not None:
        page = d.get("/api/events", {"agent": agent["id"], "before": before})
        found = turn_open(page["events"])
        if found is not None:
            return found
        before = page["next_before"]
    return False


def turn_open(events: Sequence[Mapping[str, Any]]) -> bool | None:
    """Read back from the last of ``events`` (``StoredEvent.to_dict()``s, oldest
    first): True at a message sent, False at a completed turn or the process's
    start; None if neither is there (read further back)."""
    for event in reversed(events):
        kind = event["type"]
        if kind == "user_message_sent":
            return True
        if kind == "turn_completed" or (
            kind == "state_changed" and event["data"].get("new") == "starting"
        ):
            return False
    return None
