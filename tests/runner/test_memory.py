"""Memory for agents run by agentdeck: the real Claude Code CLI through the
runner, the scripted model, the SDK's in-process hooks and a real store.

What the model is told is read from the scripted model's request log: Claude
Code puts a UserPromptSubmit hook's ``additionalContext`` into the request as
a message of role ``system`` after the user's prompt, prefixed
"UserPromptSubmit hook additional context:".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.errors import StoreError
from agentdeck.hooks.bridge import HookBridge
from agentdeck.hooks.install import hooks_settings
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.hooks.socket_server import HookSocketServer
from agentdeck.mockmodel import builtin_scenario_path, load_scenario
from agentdeck.runner.runner import Runner
from agentdeck.runner.session import AgentSession
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.mockmodel import cli_env, run_claude, running_mock, write_workspace
from tests.support.waiting import eventually
from tests.worktrees.conftest import git, make_repo

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FIX_TEST = "fix-test"
CHAT = "chat"
FINISH_SECONDS = 90.0
TOLD = "UserPromptSubmit hook additional context"
FIXED = "Fixed: add() subtracted instead of adding. The test passes now."


def fix_test(**changes: Any) -> AgentSpec:
    """fix-test runs `python3 test_calc.py`: the default profile needs that allowed."""
    return AgentSpec(
        prompt="fix the test", scenario=FIX_TEST, allow=("Bash(python3:*)",), **changes
    )


def project_with(root: Path, scenario: str, name: str = "project") -> Path:
    """A directory of our own with the scenario's files (``cwd=`` writes none)."""
    project = root / name
    project.mkdir()
    write_workspace(load_scenario(builtin_scenario_path(scenario)), project)
    return project


async def finished(runner: Runner, spec: AgentSpec) -> AgentSession:
    session = await runner.start(spec)
    await session.wait_finished(timeout=FINISH_SECONDS)
    return session


def message_requests(runner: Runner, scenario: str) -> list[dict[str, Any]]:
    """The bodies of the /v1/messages requests the scripted model got, in order."""
    model = runner.scripted_models()[scenario]
    return [r.body for r in model.requests if r.path.endswith("/messages")]


def texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [block.get("text", "") for block in content if isinstance(block, dict)]


def told_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages that carry a UserPromptSubmit hook's context."""
    return [m for m in body["messages"] if any(TOLD in t for t in texts(m))]


async def test_an_agent_leaves_an_observation_per_tool_call_and_a_summary(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    session = await finished(runner, fix_test())
    agent = session.agent
    assert agent.state == AgentState.DONE
    assert "a + b" in (Path(agent.cwd) / "calc.py").read_text()

    observations = await runner.memory.records.recent_observations(agent.cwd, 50)
    assert sorted(o.tool for o in observations) == ["Bash", "Bash", "Edit", "Read"]
    assert {o.agent_id for o in observations} == {agent.id}
    assert {o.session_id for o in observations} == {agent.session_id}
    assert [o.is_error for o in observations if o.tool == "Bash"].count(True) == 1
    [summary] = await runner.memory.records.recent_summaries(agent.cwd, 10)
    assert summary.agent_id == agent.id and summary.session_id == agent.session_id
    assert summary.final_message == FIXED
    assert summary.request == "fix the test"
    assert summary.files_changed == ("calc.py",)
    assert summary.commands == ("python3 test_calc.py",)

    recorded = [
        e.data
        for e in await store.read(agent_id=agent.id)
        if e.type == EventType.OBSERVATION_RECORDED
    ]
    assert [r["kind"] for r in recorded].count("observation") == 4
    assert "summary" in [r["kind"] for r in recorded]
    assert {r["memory_id"] for r in recorded} >= {o.id for o in observations} | {summary.id}


async def test_a_second_agent_in_the_project_is_told_and_a_resumed_one_is_not(
    deck: tuple[Store, Runner],
) -> None:
    _, runner = deck
    first = await finished(runner, fix_test())
    assert first.agent.state == AgentState.DONE
    assert not told_messages(message_requests(runner, FIX_TEST)[0]), "nothing to tell yet"

    second = await finished(runner, AgentSpec(prompt="hello", scenario=CHAT, cwd=first.agent.cwd))
    assert second.agent.state == AgentState.DONE
    opening = message_requests(runner, CHAT)[0]
    [told] = told_messages(opening)
    assert told["role"] == "system"
    context = "\n".join(texts(told))
    assert FIXED in context and "calc.py" in context and "python3 test_calc.py" in context
    prompt = next(m for m in opening["messages"] if m["role"] == "user")
    assert "hello" in texts(prompt) and not any(TOLD in t for t in texts(prompt))
    assert opening["messages"].index(prompt) < opening["messages"].index(told)

    runner.scripted_models()[CHAT].clear_requests()
    resumed = await runner.resume(second.agent.id, "say it again")
    await resumed.wait_finished(timeout=FINISH_SECONDS)
    assert resumed.last_result is not None
    assert resumed.last_result.result == "Hello again! This is my answer to your follow-up."
    for body in message_requests(runner, CHAT):
        # The history holds what the session was told at its start, once; the
        # resumed process adds nothing after it.
        assert json.dumps(body).count(TOLD) == 1
        told_at = body["messages"].index(told_messages(body)[0])
        replied_at = next(i for i, m in enumerate(body["messages"]) if m["role"] == "assistant")
        assert told_at < replied_at
        assert texts(body["messages"][-1]) == ["say it again"]


async def test_what_an_agent_in_a_worktree_learned_is_its_repositorys(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    _, runner = deck
    repo = make_repo(tmp_path / "repo")
    write_workspace(load_scenario(builtin_scenario_path(FIX_TEST)), repo)
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "the calculator")
    worker = await finished(runner, fix_test(cwd=str(repo), workspace="worktree"))
    assert worker.agent.state == AgentState.DONE
    assert (
        Path(worker.agent.cwd) != repo
        and "a + b" in (Path(worker.agent.cwd) / "calc.py").read_text()
    )
    [summary] = await runner.memory.records.recent_summaries(str(repo.resolve()), 10)
    assert summary.agent_id == worker.agent.id and summary.final_message == FIXED
    assert await runner.memory.records.recent_summaries(worker.agent.cwd, 10) == []

    later = await finished(runner, AgentSpec(prompt="hello", scenario=CHAT, cwd=str(repo)))
    assert later.agent.state == AgentState.DONE
    [told] = told_messages(message_requests(runner, CHAT)[0])
    assert FIXED in "\n".join(texts(told))


async def test_a_project_that_opted_out_runs_and_is_not_remembered(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    project = project_with(tmp_path, FIX_TEST)
    (project / ".agentdeck").mkdir()
    (project / ".agentdeck" / "ignore").write_text("")
    session = await finished(runner, fix_test(cwd=str(project)))
    assert session.agent.state == AgentState.DONE
    assert "a + b" in (project / "calc.py").read_text()
    assert await runner.memory.records.stats() == {
        "observations": 0,
        "summaries": 0,
        "projects": 0,
    }
    types = {e.type for e in await store.read(agent_id=session.agent.id)}
    assert EventType.OBSERVATION_RECORDED not in types
    assert EventType.TOOL_RETURNED in types, "the board still shows its work"


async def test_memory_that_fails_never_stops_the_agent(
    deck: tuple[Store, Runner], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, runner = deck
    project = project_with(tmp_path, FIX_TEST)
    first = await finished(runner, fix_test(cwd=str(project)))
    assert first.agent.state == AgentState.DONE
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")  # broken again

    async def broken(*_args: Any, **_kw: Any) -> Any:
        raise StoreError("the memory tables are unreadable")

    records = runner.memory.records
    for method in ("add_observation", "save_summary", "recent_summaries", "session_observations"):
        setattr(records, method, broken)
    with caplog.at_level(logging.WARNING, logger="agentdeck.runner.memory_hooks"):
        second = await finished(runner, fix_test(cwd=str(project)))
    assert second.agent.state == AgentState.DONE
    assert second.last_result is not None and second.last_result.result == FIXED
    assert "a + b" in (project / "calc.py").read_text()
    logged = [r.getMessage() for r in caplog.records]
    assert any("no context for agent" in m for m in logged), logged
    assert any("no observation for agent" in m for m in logged), logged
    assert any("could not summarize" in m for m in logged), logged
    # a known failure (a store that cannot write, a full disk) is one line, no traceback
    assert all(r.exc_info is None for r in caplog.records), logged
    assert all("the memory tables are unreadable" in m for m in logged), logged
    types = {e.type for e in await store.read(agent_id=second.agent.id)}
    assert EventType.OBSERVATION_RECORDED not in types


async def test_installed_command_hooks_step_aside_for_agentdecks_own_agents(
    deck: tuple[Store, Runner], settings: Settings, tmp_path: Path
) -> None:
    store, runner = deck
    project = project_with(tmp_path, FIX_TEST)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(hooks_settings(settings)))
    bridge = HookBridge(store, runner.governor, runner.memory)
    calls: list[HookRequest] = []

    async def daemon(request: HookRequest) -> HookReply:
        calls.append(request)
        return await bridge.handle(request)

    server = HookSocketServer()
    await server.start(settings.socket_path, daemon)
    try:
        session = await finished(runner, fix_test(cwd=str(project)))
        assert session.agent.state == AgentState.DONE
        assert calls == [], "AGENTDECK_AGENT_ID made the hook client step aside"
        assert [a.source for a in await store.list_agents()] == [AgentSource.AGENTDECK]

        # The control: the same project's settings, a session started by hand.
        async with running_mock(CHAT) as mm:
            run = await run_claude(
                ["-p", "hello"], cwd=project, env=cli_env(tmp_path / "user", mm.url_for(CHAT))
            )
        assert run.returncode == 0, run.stderr[-2000:]
        by_hand = await eventually(
            lambda: _external(store), what="the hand-started session on the board"
        )
        assert by_hand.session_id == run.result["session_id"]
        assert {c.name for c in calls} >= {"SessionStart", "UserPromptSubmit", "Stop"}
    finally:
        await server.close()


async def _external(store: Store) -> Agent | None:
    return next((a for a in await store.list_agents() if a.source is AgentSource.EXTERNAL), None)
