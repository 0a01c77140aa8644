"""The trace builder on a hand-written log: which spans, under which, with what
(pure: no daemon, no telemetry library)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.event_scrub import scrub_event
from agentdeck.core.event_types import StoredEvent
from agentdeck.core.events import ToolCalled
from agentdeck.telemetry import trace
from agentdeck.telemetry.counts import MAX_LABELS, Tally
from agentdeck.telemetry.ids import sampled, span_id_of, trace_id_of
from agentdeck.telemetry.spans import ARGUMENTS_LIMIT, SpanData
from agentdeck.telemetry.trace import TraceBuilder

KEY = "sk-ant-api03-" + "Zq9Xw" * 18


class Log:
    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.t = 1000.0

    def __call__(self, agent: str, type_: str, **data: Any) -> StoredEvent:
        self.t += 1.0
        return StoredEvent(next(self.ids), agent, type_, self.t, data)


def tree_log() -> list[StoredEvent]:
    e = Log()
    spec = {"model": "claude-x", "template": "orchestrator", "profile": "strict", "owner": "ada"}
    return [
        e("boss", "agent_spawned", name="boss", cwd="/w", spec=spec, parent_id=None),
        e("boss", "user_message_sent", text="lead"),
        e("boss", "tool_called", tool_use_id="t1", tool="mcp__deck__spawn_agent", input={}),
        e("kid", "agent_spawned", name="kid", cwd="/w", spec={"model": "m2"}, parent_id="boss"),
        e("kid", "user_message_sent", text="work"),
        e("kid", "tool_called", tool_use_id="k1", tool="Bash", input={"command": f"echo {KEY}"}),
        e("kid", "permission_requested", request_id="ap1", tool="Bash", input={}),
        e("kid", "permission_resolved", request_id="ap1", decision="allow", by="user:cli"),
        e("kid", "tool_returned", tool_use_id="k1", output="ok", size=2),
        e("kid", "question_asked", ask_id="as1", question="?", to_agent_id="boss", expires_at=0),
        e("kid", "question_answered", ask_id="as1", answer="yes", by="agent:boss"),
        e(
            "kid",
            "turn_completed",
            subtype="success",
            is_error=False,
            terminal_reason=None,
            result="done",
            session_id="s",
            num_turns=1,
            duration_ms=5,
            cost_usd=0.1,
            input_tokens=10,
            output_tokens=20,
        ),  # fmt: skip
        e("kid", "state_changed", old="running", new="done"),
        e("boss", "tool_returned", tool_use_id="t1", output="spawned", size=7),
        e(
            "boss",
            "notice",
            kind="merge_queued",
            message="q",
            detail={"id": "mg1", "branch": "b", "target": "main", "test": "pytest"},
        ),  # fmt: skip
        e(
            "boss",
            "notice",
            kind="merge",
            message="landed",
            detail={"id": "mg1", "branch": "b", "state": "landed", "landed": True},
        ),  # fmt: skip
        e(
            "boss",
            "turn_completed",
            subtype="success",
            is_error=False,
            terminal_reason=None,
            result="ok",
            session_id="s2",
            num_turns=1,
            duration_ms=5,
            cost_usd=0.2,
            input_tokens=1,
            output_tokens=2,
        ),  # fmt: skip
        e("boss", "state_changed", old="running", new="done"),
    ]


def build(events: list[StoredEvent]) -> list[SpanData]:
    builder = TraceBuilder()
    return [span for event in events for span in builder.feed(event)]


def test_one_trace_per_tree_with_the_child_under_the_turn_that_spawned_it() -> None:
    spans = build(tree_log())
    by_name = {s.name: s for s in spans}
    assert {s.trace_id for s in spans} == {trace_id_of("boss")}
    boss, kid = by_name["invoke_agent boss"], by_name["invoke_agent kid"]
    boss_turn = next(s for s in spans if s.name == "turn" and s.parent_id == boss.span_id)
    assert boss.parent_id is None and boss.span_id == span_id_of("boss")
    assert kid.parent_id == boss_turn.span_id
    assert [(ln.span_id, ln.attributes) for ln in boss_turn.links] == [
        (kid.span_id, {"agentdeck.link": "spawned"})
    ]
    assert boss.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert boss.attributes["gen_ai.request.model"] == "claude-x"
    assert boss.attributes["agentdeck.template"] == "orchestrator"
    assert boss.attributes["agentdeck.profile"] == "strict"
    assert boss.attributes["agentdeck.user"] == "ada"
    assert kid.attributes["agentdeck.parent.id"] == "boss"
    assert kid.attributes["gen_ai.usage.input_tokens"] == 10
    assert kid.attributes["gen_ai.usage.output_tokens"] == 20
    assert kid.attributes["agentdeck.state"] == "done"


def test_tools_approvals_and_asks_sit_under_their_turn_with_their_wait() -> None:
    spans = build(tree_log())
    kid_turn = next(
        s for s in spans if s.name == "turn" and s.attributes["agentdeck.agent.id"] == "kid"
    )
    tool = next(s for s in spans if s.name == "execute_tool Bash")
    approval = next(s for s in spans if s.name == "approval Bash")
    ask = next(s for s in spans if s.name == "ask")
    assert tool.parent_id == approval.parent_id == ask.parent_id == kid_turn.span_id
    assert tool.attributes["gen_ai.tool.name"] == "Bash"
    assert tool.attributes["gen_ai.tool.call.id"] == "k1"
    assert tool.end - tool.start == 3.0
    assert approval.attributes["agentdeck.approval.decision"] == "allow"
    assert approval.attributes["agentdeck.wait_seconds"] == 1.0
    assert ask.attributes["agentdeck.ask.to"] == "boss"
    assert ask.attributes["agentdeck.ask.by"] == "agent:boss"
    assert kid_turn.attributes["gen_ai.usage.output_tokens"] == 20


def test_a_merge_is_a_span_under_its_agent_with_its_test() -> None:
    merge = next(s for s in build(tree_log()) if s.name == "merge b")
    assert merge.parent_id == span_id_of("boss")
    assert merge.attributes["agentdeck.merge.test"] == "pytest"
    assert merge.attributes["agentdeck.merge.landed"] is True
    assert merge.error is None


def test_a_tool_input_is_shown_as_the_scrubbed_log_holds_it_and_cut_short() -> None:
    """The span shows what the log holds: an event as the store commits it (through
    ``scrub_event``) has no secret left for a span to show."""
    raw = ToolCalled(agent_id="a", ts=1.0, tool_use_id="k", tool="Bash", input={"command": KEY})
    stored = scrub_event(raw)
    e = Log()
    (tool,) = build(
        [
            e("a", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None),
            e("a", "tool_called", **stored.data()),
            e("a", "tool_returned", tool_use_id="k", output="", size=0),
        ]
    )
    shown = str(tool.attributes["gen_ai.tool.call.arguments"])
    assert KEY not in shown and "[REDACTED:" in shown
    e = Log()
    long = build(
        [
            e("a", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None),
            e("a", "tool_called", tool_use_id="x", tool="Write", input={"content": "y" * 10_000}),
            e("a", "tool_returned", tool_use_id="x", output="", size=0),
        ]
    )
    assert len(str(long[0].attributes["gen_ai.tool.call.arguments"])) <= ARGUMENTS_LIMIT


def test_an_agent_met_mid_life_joins_its_tree_and_close_cuts_what_is_open() -> None:
    builder = TraceBuilder()
    agent = Agent(
        id="late", name="late", state=AgentState.RUNNING, spec=AgentSpec(prompt="p"),
        cwd="/", created_at=5.0, updated_at=5.0, parent_id="mid",
    )  # fmt: skip
    builder.adopt(agent, "top", since=1500.0)
    e = Log()
    assert builder.feed(e("late", "tool_called", tool_use_id="z", tool="Read", input={})) == []
    spans = builder.close(now=2000.0)
    assert {s.trace_id for s in spans} == {trace_id_of("top")}
    assert {s.name for s in spans} == {"execute_tool Read", "turn", "invoke_agent late"}
    assert all(s.attributes["agentdeck.span.cut"] is True for s in spans)
    root = next(s for s in spans if s.name == "invoke_agent late")
    assert root.parent_id == span_id_of("mid") and root.start == 1500.0
    # Its own span, linked to the agent's first (an earlier daemon's): no id repeats.
    assert root.span_id != span_id_of("late")
    assert [(ln.span_id, ln.attributes) for ln in root.links] == [
        (span_id_of("late"), {"agentdeck.link": "continues"})
    ]
    again = TraceBuilder()
    again.adopt(agent, "top", since=2500.0)
    again.feed(e("late", "tool_called", tool_use_id="z2", tool="Read", input={}))
    later = again.close(now=3000.0)
    assert not {s.span_id for s in later} & {s.span_id for s in spans}


def test_a_resumed_agent_gets_a_new_span_under_its_first() -> None:
    e = Log()
    spans = build(
        [
            e("a", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None),
            e("a", "state_changed", old="running", new="interrupted"),
            e("a", "state_changed", old="interrupted", new="running"),
            e("a", "state_changed", old="running", new="error", reason="boom"),
        ]
    )
    first, second = spans
    assert second.parent_id == first.span_id != second.span_id
    assert second.error == "boom" and second.attributes["agentdeck.run"] == 1


def test_odd_events_are_ignored_not_fatal() -> None:
    e = Log()
    spans = build(
        [
            e("a", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None),
            e("a", "state_changed", old="running", new="no-such-state"),
            e("a", "tool_returned", tool_use_id="never-called", output="", size=0),
            e("a", "permission_resolved", request_id="never", decision="deny"),
            e("ghost", "tool_called", tool_use_id="g", tool="Bash", input={}),
            e("a", "notice", kind="merge", message="no id", detail={}),
        ]
    )
    assert spans == []


def test_the_tally_counts_since_start_and_bounds_a_models_labels() -> None:
    tally = Tally()
    for event in tree_log():
        tally.feed(event)
    assert tally.events["agent_spawned"] == 2 and tally.tool_calls == {
        "mcp__deck__spawn_agent": 1,
        "Bash": 1,
    }
    assert tally.approvals == {"allow": 1} and tally.approval_wait.count == 1
    assert tally.asks == 1 and tally.answers == {"agent": 1} and tally.ask_wait.total == 1.0
    assert tally.merges == {"landed": 1} and tally.turns == {"ok": 2}
    e = Log()
    for n in range(MAX_LABELS + 50):
        tally.feed(e("a", "tool_called", tool_use_id=str(n), tool=f"invented_{n}", input={}))
    assert len(tally.tool_calls) == MAX_LABELS + 1 and tally.tool_calls["other"] > 0


def test_ended_agents_are_forgotten_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "MAX_TRACKS", 3)
    builder = TraceBuilder()
    e = Log()
    for n in range(5):
        builder.feed(e(f"a{n}", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None))
        builder.feed(e(f"a{n}", "state_changed", old="running", new="done"))
    assert [a for a in ("a0", "a1", "a2", "a3", "a4") if builder.knows(a)] == ["a2", "a3", "a4"]


def test_an_error_the_agent_recovers_from_does_not_fail_its_span() -> None:
    e = Log()
    spans = build(
        [
            e("a", "agent_spawned", name="a", cwd="/", spec={}, parent_id=None),
            e("a", "error_occurred", message="overloaded, retrying"),
            e("a", "state_changed", old="running", new="done"),
            e("b", "agent_spawned", name="b", cwd="/", spec={}, parent_id=None),
            e("b", "error_occurred", message="the model endpoint refused the key"),
            e("b", "state_changed", old="running", new="error"),
        ]
    )
    assert [(s.name, s.error) for s in spans] == [
        ("invoke_agent a", None),
        ("invoke_agent b", "the model endpoint refused the key"),
    ]


def test_a_tree_is_traced_whole_or_not_at_all_by_its_trace_id() -> None:
    assert build(tree_log())  # ratio 1: every tree
    none = TraceBuilder(ratio=0.0)
    assert [s for event in tree_log() for s in none.feed(event)] == []
    assert none.knows("boss") and none.knows("kid")  # known: no look-up for each event
    half = TraceBuilder(ratio=0.5)
    e = Log()
    roots = [f"root{n}" for n in range(200)]
    spans = []
    for root in roots:
        spans += half.feed(e(root, "agent_spawned", name="r", cwd="/", spec={}, parent_id=None))
        spans += half.feed(e(f"{root}-kid", "agent_spawned", name="k", cwd="/", spec={},
                             parent_id=root))  # fmt: skip
    spans += half.close(now=e.t + 1)
    traced = {str(s.attributes["agentdeck.agent.id"]) for s in spans}
    assert 40 < len({t for t in traced if "-" not in t}) < 160
    assert all((f"{root}-kid" in traced) == (root in traced) for root in roots)
    assert all(sampled(trace_id_of(r), 0.5) == (r in traced) for r in roots)
