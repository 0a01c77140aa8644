"""The runner with the real Claude Code CLI against the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import InvalidState, ScenarioError
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_run_uses_bash_write_read_and_edit_on_a_real_workspace(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="Tidy up the notes file", scenario="demo"))
    await session.wait_finished(timeout=60)

    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE
    notes = Path(agent.cwd) / "notes.md"
    assert notes.read_text() == "# Notes\n\n- Buy milk\n- Call Bob\n- Fix the bike\n"
    assert Path(agent.cwd).parent == runner.settings.workspaces_dir

    events = await store.read(agent_id=agent.id)
    tools = [e.data["tool"] for e in events if e.type == EventType.TOOL_CALLED]
    assert tools == ["Write", "Read", "Edit", "Bash"]
    results = [e for e in events if e.type == EventType.TOOL_RETURNED]
    assert len(results) == 4 and not any(r.data["is_error"] for r in results)
    assert "notes.md" in results[-1].data["output"]
    (turn,) = [e for e in events if e.type == EventType.TURN_COMPLETED]
    assert turn.data["is_error"] is False
    assert turn.data["terminal_reason"] == "completed"
    assert turn.data["num_turns"] == 5
    # the durable record matches what the board shows
    assert agent.session_id == turn.data["session_id"]
    assert agent.cost_usd == pytest.approx(turn.data["cost_usd"]) and agent.cost_usd > 0
    assert agent.turns == 5 and agent.input_tokens > 0 and agent.output_tokens > 0
    states = [e.data["new"] for e in events if e.type == EventType.STATE_CHANGED]
    assert states == ["starting", "running", "done"]
    ids = [e.id for e in events]
    assert ids == sorted(ids)


async def test_follow_up_turn_on_the_same_process(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="hello", scenario="chat"), keep_alive=True)
    first = await session.next_result(timeout=60)
    assert first is not None and not first.is_error
    assert session.agent.state == AgentState.IDLE
    pid = session.pid

    await session.send("tell me again")
    second = await session.next_result(timeout=60)
    assert second is not None and not second.is_error
    assert second.result == "Hello again! This is my answer to your follow-up."
    assert session.pid == pid  # same process, same conversation
    assert second.session_id == first.session_id

    await session.close()
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE and agent.pid is None
    texts = [
        e.data["text"]
        for e in await store.read(agent_id=agent.id)
        if e.type == EventType.USER_MESSAGE_SENT
    ]
    assert texts == ["hello", "tell me again"]


async def test_a_tool_the_profile_does_not_allow_is_denied_with_its_reason(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    # long-tool runs `python3 -c …`: no rule of the strict profile allows it.
    session = await runner.start(AgentSpec(prompt="go", scenario="long-tool", profile="strict"))
    await session.wait_finished(timeout=60)
    events = await store.read(agent_id=session.agent.id)
    (resolved,) = [e for e in events if e.type == EventType.PERMISSION_RESOLVED]
    assert resolved.data["decision"] == "deny" and resolved.data["by"] == "policy"
    assert "strict" in resolved.data["reason"]
    returned = next(e for e in events if e.type == EventType.TOOL_RETURNED)
    assert returned.data["is_error"] is True
    assert resolved.data["reason"] in returned.data["output"]
    assert session.agent.state == AgentState.DONE


async def test_five_megabyte_tool_output_is_cut_in_the_event_and_kept_on_disk(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    session = await runner.start(
        AgentSpec(prompt="print a lot", scenario="big-output", allow=("Bash(python3:*)",))
    )
    await session.wait_finished(timeout=90)
    assert session.agent.state == AgentState.DONE
    returned = next(
        e for e in await store.read(agent_id=session.agent.id) if e.type == EventType.TOOL_RETURNED
    )
    limit = runner.settings.tool_output_limit
    assert returned.data["truncated"] is True
    assert len(returned.data["output"].encode()) <= limit
    full = Path(returned.data["payload_path"])
    assert full.is_relative_to(runner.settings.payloads_dir)
    assert full.stat().st_size == returned.data["size"] == 5_000_001
    assert full.read_text().strip() == "x" * 5_000_000


async def test_oversize_output_without_a_cli_file_is_cut_and_stored(tmp_path: Path) -> None:
    from claude_agent_sdk import ToolResultBlock, UserMessage

    from agentdeck.runner.mapping import MessageMapper
    from agentdeck.runner.payloads import PayloadStore

    mapper = MessageMapper("a1", PayloadStore(tmp_path), output_limit=10, clock=lambda: 1.0)
    text = "é" * 20  # 40 bytes: the cut must not split a character
    mapped = mapper.map(UserMessage(content=[ToolResultBlock(tool_use_id="t1", content=text)]))
    (event,) = mapped.events
    data = event.data()
    assert data["truncated"] and data["size"] == 40 and data["output"] == "é" * 5
    assert Path(data["payload_path"]).read_text() == text


async def test_a_scenario_with_a_mistake_is_refused_before_anything_starts(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nturns:\n  - reply:\n      - txt: hello\n")
    with pytest.raises(ScenarioError) as info:
        await runner.start(AgentSpec(prompt="go", scenario=str(bad)))
    assert "bad.yaml" in str(info.value) and "turn 1" in str(info.value)
    assert await store.list_agents() == []


async def test_resume_from_a_new_process_sends_the_earlier_conversation(
    deck: tuple[Store, Runner], settings: object
) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="hello", scenario="chat"))
    await session.wait_finished(timeout=60)
    first_pid = session.spawned_pid
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE and agent.session_id

    # The first process is gone; the scripted model restarts too (a fresh runner).
    await runner.shutdown()
    fresh = build_runner(store, runner.settings)
    try:
        resumed = await fresh.resume(agent.id, "say it again")
        await resumed.wait_finished(timeout=60)
        assert resumed.agent.id == agent.id
        assert resumed.agent.state == AgentState.DONE
        assert resumed.agent.session_id == agent.session_id
        assert resumed.spawned_pid and first_pid and resumed.spawned_pid != first_pid
        assert resumed.last_result is not None
        assert resumed.last_result.result == "Hello again! This is my answer to your follow-up."
        (model,) = fresh.scripted_models().values()
        request = [r for r in model.requests if r.turn is not None][-1]
        history = str(request.body["messages"])
        assert "hello" in history and "Hello! I am the scripted model" in history
        assert resumed.agent.cost_usd > agent.cost_usd  # cost accumulates across processes
    finally:
        await fresh.shutdown()


async def test_fork_makes_a_new_agent_and_leaves_the_original(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    session = await runner.start(AgentSpec(prompt="hello", scenario="chat"))
    await session.wait_finished(timeout=60)
    original = await store.get_agent(session.agent.id)

    fork = await runner.resume(original.id, "again please", fork=True)
    await fork.wait_finished(timeout=60)
    assert fork.agent.id != original.id
    assert fork.agent.extra["forked_from"] == original.id
    assert fork.agent.session_id and fork.agent.session_id != original.session_id
    assert (await store.get_agent(original.id)).session_id == original.session_id


async def test_resume_refuses_a_live_agent(deck: tuple[Store, Runner]) -> None:
    _, runner = deck
    session = await runner.start(AgentSpec(prompt="hello", scenario="chat"), keep_alive=True)
    await session.next_result(timeout=60)
    with pytest.raises(InvalidState):
        await runner.resume(session.agent.id, "x")


def test_cost_events_carry_each_turns_delta(tmp_path: Path) -> None:
    from claude_agent_sdk import ResultMessage

    from agentdeck.runner.mapping import MessageMapper
    from agentdeck.runner.payloads import PayloadStore

    mapper = MessageMapper("a1", PayloadStore(tmp_path), output_limit=100, clock=lambda: 1.0)

    def result(total: float) -> ResultMessage:
        return ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=1,
            is_error=False,
            num_turns=1,
            session_id="s",
            total_cost_usd=total,
        )

    deltas = []
    for total in (0.25, 0.75, 0.75):
        (cost,) = [e for e in mapper.map(result(total)).events if e.type == EventType.COST_UPDATED]
        deltas.append(cost.data()["delta_usd"])
    assert deltas == [0.25, 0.5, 0.0]
