"""The quick path prints the daemon's JSON without the core records: what it knows
of them (states, event types, a merge entry's line) is held equal to the records."""

from __future__ import annotations

import ast
import inspect

from agentdeck.cli import remote, remote_follow, render
from agentdeck.core import log_lines
from agentdeck.core.agent import AgentState
from agentdeck.core.approvals import ApprovalState
from agentdeck.core.asks import AskState
from agentdeck.core.event_types import EventType
from agentdeck.core.merge_queue import PENDING, MergeEntry, MergeState


def test_the_states_are_the_records_states() -> None:
    assert tuple(s.value for s in AgentState) == remote_follow.AGENT_STATES
    assert {s.value for s in AgentState if s.is_final} == remote_follow.FINAL_STATES
    assert {s.value for s in AgentState if s.is_live} == remote_follow.LIVE_STATES
    assert {s.value for s in AgentState if not s.is_final} == remote_follow.UNFINISHED
    assert tuple(s.value for s in ApprovalState) == remote.APPROVAL_STATES
    assert tuple(s.value for s in AskState) == remote.ASK_STATES
    assert tuple(s.value for s in PENDING) == remote.MERGE_PENDING
    assert set(render.STATE_STYLE) == {s.value for s in AgentState}


def test_every_event_type_the_log_draws_is_one_of_the_records() -> None:
    tree = ast.parse(inspect.getsource(log_lines.log_line))  # `logs` and the TUI draw these
    drawn = {
        node.comparators[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "kind"
        and isinstance(node.comparators[0], ast.Constant)
    }
    assert len(drawn) >= 14
    assert drawn <= {t.value for t in EventType}


def test_a_merge_entry_reads_as_the_record_says_it() -> None:
    entries = [
        MergeEntry(id="m1234567890", agent_id="a1", repo="/r", branch="agent/x", target="main",
                   strategy="merge", test="pytest -x", state=MergeState.QUEUED, by="user:cli",
                   enqueued_at=2.0),
        MergeEntry(id="m2", agent_id="a2", repo="/r", branch="agent/y", target="main",
                   strategy="squash", test=None, state=MergeState.MERGING, by="user:cli",
                   enqueued_at=1.0),
        MergeEntry(id="m3", agent_id="a3", repo="/s", branch="agent/z", target="dev",
                   strategy="rebase", test=None, state=MergeState.REFUSED, by="agent:a1",
                   enqueued_at=0.5, reason="conflicts in a.py", outcome={"conflicts": ["a.py"]}),
    ]  # fmt: skip
    for e in entries:
        assert remote.describe_merge(e.result()) == e.describe()
    text = remote.queue_text([e.result() for e in entries], recent=5)
    assert text.splitlines() == [
        "merging now  m2  agent/y → main (squash)  merging",
        "             in /r",
        "         #2  m1234567  agent/x → main (merge, test: pytest -x)  queued",
        "             in /r",
        "recent:",
        "  m3  agent/z → dev (rebase)  refused: conflicts in a.py",
    ]
