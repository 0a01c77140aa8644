"""The policy enforced on agents run by agentdeck: the real CLI, the scripted model."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.approvals import ApprovalState
from agentdeck.core.events import EventType
from agentdeck.errors import PolicyDenied
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def write_profile(tmp_path: Path, **fields: Any) -> str:
    data = {
        "name": "test",
        "default": "ask",
        "approval_timeout_seconds": 30,
        "allow": ["Read", "Edit(/**)", "Bash(echo:*)", "Bash(ls:*)"],
        **fields,
    }
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def write_scenario(tmp_path: Path, *commands: str, files: dict[str, str] | None = None) -> str:
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c, "description": "run"}}}]}
        for c in commands
    ]
    turns.append({"reply": [{"text": "All done."}]})
    path = tmp_path / "script.yaml"
    path.write_text(
        yaml.safe_dump({"name": "script", "workspace": {"files": files or {}}, "turns": turns})
    )
    return str(path)


def model_bodies(runner: Runner) -> str:
    (model,) = runner.scripted_models().values()
    return str([r.body for r in model.requests])


async def test_a_denied_rm_never_runs_and_the_model_hears_why(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, deny=["Bash(rm:*)"])
    scenario = write_scenario(tmp_path, "rm keep.txt", files={"keep.txt": "precious\n"})
    session = await runner.start(AgentSpec(prompt="clean up", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    assert (Path(session.agent.cwd) / "keep.txt").read_text() == "precious\n"
    events = await store.read(agent_id=session.agent.id)
    (resolved,) = [e.data for e in events if e.type == EventType.PERMISSION_RESOLVED]
    assert resolved["decision"] == "deny" and resolved["rule"] == "Bash(rm:*)"
    assert resolved["reason"] in model_bodies(runner)  # the model's next request carries it
    assert session.agent.state == AgentState.DONE


async def test_a_compound_command_cannot_smuggle_a_denied_part(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, default="deny")
    scenario = write_scenario(
        tmp_path, "echo hi; rm keep.txt", "echo $(rm keep.txt)", files={"keep.txt": "precious\n"}
    )
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    assert (Path(session.agent.cwd) / "keep.txt").exists()
    decisions = [
        e.data["decision"]
        for e in await store.read(agent_id=session.agent.id)
        if e.type == EventType.PERMISSION_RESOLVED
    ]
    assert decisions == ["deny", "deny"]


async def test_an_unanswered_ask_is_denied_at_the_timeout(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, approval_timeout_seconds=2)
    scenario = write_scenario(tmp_path, "touch made.txt")
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))

    async def asked() -> bool:
        return session.agent.state == AgentState.AWAITING_PERMISSION

    await eventually(asked, timeout=30, what="the agent to wait for an approval")
    await session.wait_finished(timeout=60)
    assert not (Path(session.agent.cwd) / "made.txt").exists()
    (approval,) = await runner.governor.approvals.list_approvals(states=None)
    assert approval.state == ApprovalState.EXPIRED and approval.answered_by == "timeout"
    resolved = [
        e.data
        for e in await store.read(agent_id=session.agent.id)
        if e.type == EventType.PERMISSION_RESOLVED
    ]
    assert resolved[-1]["decision"] == "deny" and "nobody answered" in resolved[-1]["reason"]


async def test_an_ask_answered_lets_the_tool_run_and_always_remembers(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path)
    scenario = write_scenario(tmp_path, "touch one.txt", "touch one.txt two.txt")
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))

    async def pending() -> list[Any]:
        return await runner.governor.approvals.list_approvals()

    (approval,) = await eventually(pending, timeout=30, what="an approval request")
    from agentdeck.core.approvals import GrantScope

    await runner.governor.answer(
        approval.id, "allow", by="user:test", remember=GrantScope.PERSISTENT
    )
    await session.wait_finished(timeout=60)
    cwd = Path(session.agent.cwd)
    # the remembered rule (`Bash(touch one.txt:*)`) covered the second call
    assert (cwd / "one.txt").exists() and (cwd / "two.txt").exists()
    assert len(await runner.governor.approvals.list_approvals(states=None)) == 1


async def test_a_budget_cap_stops_the_agent(deck: tuple[Store, Runner], tmp_path: Path) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, budgets={"max_usd": 0.01})
    scenario = write_scenario(tmp_path, "echo one", "echo two", "echo three")
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.ERROR
    assert agent.last_error and "budget" in agent.last_error
    kinds = [
        e.data["kind"]
        for e in await store.read(agent_id=agent.id)
        if e.type == EventType.ERROR_OCCURRED
    ]
    assert "guardrail:budget" in kinds


async def test_the_circuit_breaker_stops_repeated_calls(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, budgets={"max_repeated_calls": 3})
    scenario = write_scenario(tmp_path, *["echo again"] * 6)
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.ERROR
    assert agent.last_error and "in a row" in agent.last_error
    calls = [e for e in await store.read(agent_id=agent.id) if e.type == EventType.TOOL_CALLED]
    assert 3 <= len(calls) < 6


async def test_every_decision_lands_in_the_audit_log_and_tampering_shows(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, deny=["Bash(rm:*)"])
    scenario = write_scenario(tmp_path, "echo hi", "rm x")
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    entries = await store.read_audit()
    assert [(e.tool, str(e.decision)) for e in entries] == [("Bash", "allow"), ("Bash", "deny")]
    assert (await store.verify_audit()).ok
    db = sqlite3.connect(store.db_path)
    try:
        db.execute("UPDATE audit SET decision = 'allow' WHERE id = ?", (entries[1].id,))
        db.commit()
    finally:
        db.close()
    result = await store.verify_audit()
    assert not result.ok and result.entry_id == entries[1].id


async def test_the_fleet_daily_cap_stops_an_agent(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile = write_profile(tmp_path, budgets={"daily_usd": 0.01})
    scenario = write_scenario(tmp_path, "echo one", "echo two", "echo three")
    session = await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.ERROR
    assert agent.last_error and "daily budget exceeded" in agent.last_error
    # Over the cap, a new agent under it does not start at all: nothing is spent.
    with pytest.raises(PolicyDenied, match="daily budget exceeded"):
        await runner.start(AgentSpec(prompt="go", scenario=scenario, profile=profile))
    (refused, _) = await store.list_agents()
    assert refused.state == AgentState.ERROR and refused.cost_usd == 0
