"""Hand-started sessions through the installed hooks, end to end: the real
Claude Code CLI (``claude -p`` with the hooks passed by ``--settings``), the
real hook client, the real daemon (socket, bridge, policy, memory, store) and
the scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSource, AgentState
from agentdeck.daemon.deck import Deck
from agentdeck.hooks.install import hooks_settings
from agentdeck.runner.procs import terminate_tree
from agentdeck.settings import Settings
from tests.support.mockmodel import cli_env, run_claude, running_mock, write_workspace
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FIX_TEST = "fix-test"
# The hooks leave a call no deny or ask rule matches to Claude Code's own rules:
# the person's, given here as in a terminal.
USERS_OWN_RULES = "Bash,Read,Edit"
START_DEADLINE_SECONDS = 30.0
STOP_GRACE_SECONDS = 1.0


@contextlib.asynccontextmanager
async def running_daemon(settings: Settings) -> AsyncIterator[Deck]:
    """The real daemon (``serve``) in this loop: hook socket, web app, Deck."""
    async with serving(settings) as served:
        yield served.deck


def hooked_settings(settings: Settings, tmp_path: Path) -> Path:
    path = tmp_path / "hooks-settings.json"
    path.write_text(json.dumps(hooks_settings(settings)))
    return path


def project_with(tmp_path: Path, scenario: str, name: str = "project") -> Path:
    from agentdeck.mockmodel import builtin_scenario_path, load_scenario

    project = tmp_path / name
    project.mkdir()
    write_workspace(load_scenario(builtin_scenario_path(scenario)), project)
    return project


async def claude_p(
    prompt: str,
    settings: Settings,
    tmp_path: Path,
    *,
    project: Path,
    url: str,
    allow: str = "Bash",
    extra: Sequence[str] = (),
) -> Any:
    """``claude -p prompt`` in ``project`` with the deck's hooks (``--settings``),
    its home ``tmp_path/user``, as a person starts one by hand."""
    hooks = hooked_settings(settings, tmp_path)
    env = cli_env(tmp_path / "user", url)
    return await run_claude(
        ["-p", prompt, "--settings", str(hooks), "--allowedTools", allow, *extra],
        cwd=project,
        env=env,
        timeout=120,
    )


async def external_agent(deck: Deck) -> Any:
    agents = await deck.list_agents(limit=10)
    return [a for a in agents if a.source is AgentSource.EXTERNAL]


def profile_file(tmp_path: Path, **profile: Any) -> str:
    path = tmp_path / f"{profile['name']}.yaml"
    path.write_text(yaml.safe_dump(profile))
    return str(path)


async def test_a_hand_started_session_appears_on_the_board_with_its_tool_calls(
    settings: Settings, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"profile": "permissive"})
    project = project_with(tmp_path, FIX_TEST)
    async with running_mock(FIX_TEST) as mm, running_daemon(settings) as deck:
        run = await claude_p(
            "fix the test",
            settings,
            tmp_path,
            project=project,
            url=mm.url_for(FIX_TEST),
            allow=USERS_OWN_RULES,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert "a + b" in (project / "calc.py").read_text()

        async def ended() -> Any:
            agents = await external_agent(deck)
            return agents if agents and agents[0].state is AgentState.DONE else None

        [agent] = await eventually(ended)
        assert agent.session_id == run.result["session_id"]
        assert agent.cwd == str(project)
        events = await deck.events(agent_id=agent.id)
        called = [e.data["tool"] for e in events if e.type == "tool_called"]
        assert called == ["Bash", "Read", "Edit", "Bash"]
        returned = [e.data for e in events if e.type == "tool_returned"]
        assert len(returned) == 4
        assert "all tests passed" in returned[-1]["output"]
        texts = [e.data["text"] for e in events if e.type == "assistant_text"]
        assert texts and texts[-1].startswith("Fixed: add()")
        kinds = [e.data["kind"] for e in events if e.type == "observation_recorded"]
        assert kinds.count("observation") == 4 and "summary" in kinds

        hits = await deck._memory.search("calc", project=str(project))
        assert hits, "the session's observations are searchable"


async def test_a_profile_deny_stops_the_tool_in_the_hand_started_session(
    settings: Settings, tmp_path: Path
) -> None:
    profile = profile_file(tmp_path, name="no-python", default="allow", deny=["Bash(python3:*)"])
    settings = settings.model_copy(update={"profile": profile})
    project = project_with(tmp_path, FIX_TEST)
    async with running_mock(FIX_TEST) as mm, running_daemon(settings) as deck:
        run = await claude_p(
            "fix the test",
            settings,
            tmp_path,
            project=project,
            url=mm.url_for(FIX_TEST),
        )
        denials = run.result.get("permission_denials") or []
        assert denials and denials[0]["tool_name"] == "Bash"
        results = [
            block
            for line in run.of_type("user")
            for block in line["message"]["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        assert "Bash(python3:*)" in json.dumps(results[0])

        async def denied() -> Any:
            [agent] = await external_agent(deck) or [None]
            if agent is None:
                return None
            events = await deck.events(agent_id=agent.id)
            return [e for e in events if e.type == "permission_resolved"] or None

        [resolved, *_] = await eventually(denied)
        assert resolved.data["decision"] == "deny"
        assert resolved.data["rule"] == "Bash(python3:*)"


async def test_a_second_session_is_told_what_the_first_one_did(
    settings: Settings, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"profile": "permissive"})
    project = project_with(tmp_path, FIX_TEST)
    async with running_mock(FIX_TEST, "chat") as mm, running_daemon(settings) as deck:
        first = await claude_p(
            "fix the test",
            settings,
            tmp_path,
            project=project,
            url=mm.url_for(FIX_TEST),
            allow=USERS_OWN_RULES,
        )
        assert first.returncode == 0, first.stderr[-2000:]

        async def summarized() -> Any:
            agents = await external_agent(deck)
            return agents if agents and agents[0].state is AgentState.DONE else None

        await eventually(summarized)
        mm.clear_requests()
        second = await claude_p(
            "hello again",
            settings,
            tmp_path,
            project=project,
            url=mm.url_for("chat"),
        )
        assert second.returncode == 0, second.stderr[-2000:]
        bodies = [r.body for r in mm.requests if r.path.endswith("/messages")]
        told = json.dumps(bodies[0])
        assert "SessionStart hook additional context" in told
        assert "Fixed: add() subtracted instead of adding" in told
        assert "calc.py" in told


async def test_a_running_tool_call_is_on_the_board_while_it_runs(
    settings: Settings, tmp_path: Path
) -> None:
    from tests.support.mockmodel import claude_cli_path

    settings = settings.model_copy(update={"profile": "permissive"})
    project = tmp_path / "project"
    project.mkdir()
    async with running_mock("long-tool") as mm, running_daemon(settings) as deck:
        env = cli_env(tmp_path / "user", mm.url_for("long-tool"))
        hooks = hooked_settings(settings, tmp_path)
        proc = await asyncio.create_subprocess_exec(
            str(claude_cli_path()),
            *("-p", "start the long job", "--settings", str(hooks), "--allowedTools", "Bash"),
            cwd=project,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:

            async def in_tool() -> Any:
                agents = await external_agent(deck)
                running = [a for a in agents if a.current_tool == "Bash"]
                return running or None

            [agent] = await eventually(in_tool, what="the external agent to show its tool")
            assert agent.state is AgentState.RUNNING and proc.returncode is None
            events = await deck.events(agent_id=agent.id)
            assert [e.data["tool"] for e in events if e.type == "tool_called"] == ["Bash"]
            assert not [e for e in events if e.type == "tool_returned"]
        finally:
            # Claude Code runs the tool in a session of its own: stop the whole tree.
            await asyncio.to_thread(terminate_tree, proc.pid, STOP_GRACE_SECONDS)
            await proc.wait()
