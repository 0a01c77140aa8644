"""``core.policy_replay``: the ledger that rebuilds each call's decision from the
log's events, whatever order the writers put them in, and the tally's shapes."""

from __future__ import annotations

from typing import Any

from agentdeck.core.event_types import EventType, StoredEvent
from agentdeck.core.policy_profile import Decision
from agentdeck.core.policy_replay import (
    MAX_GROUPS,
    OTHER_RULE,
    CallLedger,
    RecordedCall,
    ReplayTally,
    input_text,
    shown,
)

_ids = iter(range(1, 10**6))


def ev(kind: EventType, agent: str = "a1", **data: Any) -> StoredEvent:
    return StoredEvent(id=next(_ids), agent_id=agent, type=str(kind), ts=1.0, data=data)


def called(use: str, command: str, agent: str = "a1") -> StoredEvent:
    return ev(
        EventType.TOOL_CALLED, agent, tool_use_id=use, tool="Bash", input={"command": command}
    )


def returned(use: str, agent: str = "a1") -> StoredEvent:
    return ev(EventType.TOOL_RETURNED, agent, tool_use_id=use, output="ok")


def run(*events: StoredEvent) -> list[RecordedCall]:
    ledger = CallLedger()
    out = [c for e in events for c in ledger.feed(e)]
    return out + list(ledger.flush())


def decisions(calls: list[RecordedCall]) -> dict[str | None, Decision]:
    return {c.tool_use_id: c.before for c in calls}


def test_a_call_with_no_decision_was_allowed_and_a_deny_is_its_own() -> None:
    calls = run(
        called("t1", "ls"), returned("t1"),
        called("t2", "rm x"),
        ev(EventType.PERMISSION_RESOLVED, request_id="t2", decision="deny", by="policy"),
        returned("t2"),
    )  # fmt: skip
    assert decisions(calls) == {"t1": Decision.ALLOW, "t2": Decision.DENY}


def test_an_approval_request_makes_its_call_an_ask_in_either_order() -> None:
    asked = {"tool": "Bash", "input": {"command": "touch x"}}
    after = run(
        called("t1", "touch x"),
        ev(EventType.PERMISSION_REQUESTED, request_id="ap1", **asked),
        ev(EventType.PERMISSION_RESOLVED, request_id="ap1", decision="allow", by="user:web"),
        returned("t1"),
    )
    before = run(  # the governor's request committed before the runner's tool call
        ev(EventType.PERMISSION_REQUESTED, request_id="ap2", **asked),
        called("t2", "touch x"),
        ev(EventType.PERMISSION_RESOLVED, request_id="ap2", decision="deny", by="timeout"),
        returned("t2"),
    )
    assert [(c.before, c.answered) for c in after] == [(Decision.ASK, "allow by user:web")]
    assert [(c.before, c.answered) for c in before] == [(Decision.ASK, "deny by timeout")]


def test_a_request_for_another_input_or_agent_is_not_its_call() -> None:
    calls = run(
        called("t1", "touch x"),
        ev(EventType.PERMISSION_REQUESTED, "a2", request_id="ap1", tool="Bash",
           input={"command": "touch x"}),
        returned("t1"),
    )  # fmt: skip
    assert sorted((c.agent_id, c.before) for c in calls) == [
        ("a1", Decision.ALLOW),
        ("a2", Decision.ASK),  # its call never seen: the request stands for it
    ]


def test_calls_left_open_are_flushed_once() -> None:
    calls = run(called("t1", "sleep 100"), called("t2", "ls"), returned("t2"))
    assert sorted(c.tool_use_id or "" for c in calls) == ["t1", "t2"]


def test_the_tally_folds_groups_past_the_cap_and_counts_every_call() -> None:
    tally = ReplayTally()
    for n in range(MAX_GROUPS + 5):
        call = RecordedCall(n, "a1", 1.0, "Bash", {"command": f"c{n}"}, f"t{n}")
        tally.decided(call, Decision.DENY, f"Bash(c{n})", "profile:x", "why", "default")
    tally.undecided("gone")
    report = tally.report(
        profile="x", profile_source="<memory>", since=None, agent_id=None, project=None
    )
    assert report.calls == MAX_GROUPS + 6 and report.changed == MAX_GROUPS + 5
    assert len(report.groups) == MAX_GROUPS + 1
    assert next(g for g in report.groups if g.rule == OTHER_RULE).count == 5


def test_shown_text_is_scrubbed_one_line_and_cut() -> None:
    assert shown("a\nb") == "a⏎b"
    assert shown("x" * 500).endswith("…") and len(shown("x" * 500)) == 241
    assert "\x1b" not in shown("\x1b[31mred") and "\u202e" not in shown("\u202eevil")
    secret = "sk-ant-api03-" + "Q" * 60
    assert secret not in input_text({"command": f"curl -H 'x-api-key: {secret}'"})
    assert "hunter2" not in input_text({"password": "hunter2"})
