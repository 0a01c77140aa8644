"""The agent table's model and the transcript's lines: pure, no daemon."""

from __future__ import annotations

from typing import Any

from agentdeck.core.agent import Agent
from agentdeck.core.events import StoredEvent
from agentdeck.tui.board import Board, age
from agentdeck.tui.entries import Entry, entries_from, renderable
from agentdeck.tui.render import tool_summary
from tests.tui.test_snapshots import agent as an_agent


def agent(id_: str, name: str, *, parent: str | None = None, at: float = 0.0, **kw: Any) -> Agent:
    return an_agent(id_, name, kw.pop("state", "running"), at=at, parent=parent, **kw)


def event(id_: int, agent_id: str, kind: str, **data: Any) -> StoredEvent:
    return StoredEvent(id=id_, agent_id=agent_id, type=kind, ts=5.0, data=data)


def test_rows_are_in_tree_order_and_a_filter_keeps_ancestors() -> None:
    board = Board()
    board.load(
        [
            agent("r1", "old-root", at=1),
            agent("r2", "new-root", at=2),
            agent("c1", "writer", parent="r1", at=3),
            agent("c2", "tester", parent="r1", at=4),
            agent("g1", "helper", parent="c2", at=5),
        ]
    )
    order = [(row.name, depth) for row, depth in board.ordered()]
    assert order == [
        ("new-root", 0),
        ("old-root", 0),
        ("writer", 1),
        ("tester", 1),
        ("helper", 2),
    ]
    assert [row.name for row, _ in board.ordered("help")] == ["old-root", "tester", "helper"]
    assert [row.name for row, _ in board.ordered("nothing like it")] == []


def test_events_move_rows_along_and_mark_what_to_read_again() -> None:
    board = Board()
    board.load([agent("a1", "one")])
    assert board.apply(event(1, "a1", "tool_called", tool="Bash", input={})) == "a1"
    assert board.rows["a1"].current_tool == "Bash"
    assert board.apply(event(2, "a1", "tool_returned", output="ok")) == "a1"
    assert board.rows["a1"].current_tool is None
    assert board.apply(event(3, "a1", "cost_updated", cost_usd=0.5)) == "a1"
    assert board.rows["a1"].cost_usd == 0.5
    assert board.apply(event(4, "a1", "state_changed", old="running", new="idle")) == "a1"
    assert board.rows["a1"].state == "idle" and "a1" in board.stale
    assert board.apply(event(5, "a1", "assistant_text", text="hi")) is None
    # A new agent gets a row at once, and is read again for what the event lacks.
    assert board.apply(event(6, "b2", "agent_spawned", name="two", parent_id="a1")) == "b2"
    assert board.rows["b2"].parent_id == "a1" and "b2" in board.stale
    assert board.apply(event(7, "zz", "tool_called", tool="Read")) is None  # unknown agent


def test_age_is_short() -> None:
    assert age(100.0, now=142.0) == "42s"
    assert age(0.0, now=3 * 3600 + 5) == "3h"
    assert age(10.0, now=5.0) == "0s"


def test_transcript_lines() -> None:
    assert tool_summary("Bash", {"command": "pytest   -q\n-x"}) == "Bash(pytest -q -x)"
    assert tool_summary("Custom", {}) == "Custom"
    assert tool_summary("mcp__x__y", {"n": 1, "what": "it"}) == "mcp__x__y(it)"
    calls: dict[str, Entry] = {}
    [call] = entries_from(
        [event(1, "a", "tool_called", tool="Read", input={"file_path": "a.py"}, tool_use_id="t")],
        calls,
    )
    assert "▸ ⚙ Read(a.py)" in renderable(call).plain  # type: ignore[union-attr]
    # What came from an agent is never taken as markup.
    [said] = entries_from([event(2, "a", "notice", message="[b]not bold[/b]")], calls)
    assert renderable(said).plain == "· [b]not bold[/b]"  # type: ignore[union-attr]
    [failed] = entries_from(
        [event(3, "a", "tool_returned", output="boom", is_error=True, tool_use_id="x")], calls
    )
    assert renderable(failed).plain == "  ⎿ boom"  # type: ignore[union-attr]
    assert entries_from([event(4, "a", "hook_received", hook="X")], calls) == []


def test_a_transcript_shows_the_first_prompt_once() -> None:
    """The prompt is in ``agent_spawned`` and, sent, in the first ``user_message_sent``:
    it was shown for each."""
    spawned = event(1, "a", "agent_spawned", name="n", cwd="/", spec={"prompt": "fix [it]"})
    sent = event(3, "a", "user_message_sent", text="fix [it]")
    started = event(2, "a", "state_changed", old=None, new="starting")
    shown = [renderable(e).plain for e in entries_from([spawned, started, sent], {})]  # type: ignore[union-attr]
    assert shown == ["◆ state starting", "> fix [it]"]


def test_mcp_tools_are_short_in_the_table() -> None:
    from agentdeck.tui.agent_table import short_tool

    assert short_tool("mcp__deck__wait_for_agents") == "wait_for_agents"
    assert short_tool("Bash") == "Bash" and short_tool(None) == ""


def test_siblings_sort_by_name_state_or_cost_and_children_stay_under_parents() -> None:
    board = Board()
    board.load(
        [
            agent("r1", "beta", at=1, cost=0.5, state="idle"),
            agent("r2", "alpha", at=2, cost=0.1),
            agent("c1", "zed", parent="r1", at=3, cost=0.2),
            agent("c2", "kid", parent="r1", at=4, cost=0.3),
        ]
    )

    def names(sort: Any) -> list[str]:
        return [row.name for row, _ in board.ordered(sort=sort)]

    assert names(None) == ["alpha", "beta", "zed", "kid"]
    assert names("name") == ["alpha", "beta", "kid", "zed"]
    assert names("cost") == ["beta", "kid", "zed", "alpha"]
    assert names("state") == ["beta", "kid", "zed", "alpha"]  # idle before running
