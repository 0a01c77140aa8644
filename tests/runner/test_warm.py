"""The warm pool: a Claude Code process started ahead, claimed by the next
matching agent (real CLI, scripted model)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.runner import procs
from agentdeck.runner.runner import Runner
from agentdeck.runner.warm import Warm
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.governance.test_enforcement import write_profile, write_scenario
from tests.sandbox.conftest import needs_bwrap
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.fixture
async def pooled(tmp_path: Path) -> AsyncIterator[tuple[Store, Runner]]:
    settings = make_settings(tmp_path, warm_pool=1)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings, warm_pool=settings.warm_pool)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


async def warm_one(runner: Runner) -> Warm:
    async def ready() -> Warm | None:
        return runner.warm._warm[0] if len(runner.warm) else None

    return await eventually(ready, timeout=60, what="a warm Claude Code")


async def run_to_end(store: Store, runner: Runner, spec: AgentSpec) -> str:
    session = await runner.start(spec)
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE, agent.last_error
    return agent.id


async def test_the_next_agent_runs_on_the_warm_process_and_is_recorded_as_ever(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    first = await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))
    warm = await warm_one(runner)
    # Reserved, not recorded: the board and the log know nothing of it.
    assert warm.agent_id != first
    assert [a.id for a in await store.list_agents(limit=100)] == [first]
    assert [e for e in await store.read(limit=100_000) if e.agent_id == warm.agent_id] == []
    assert procs.is_running(warm.pid) and warm.cwd.is_dir()

    session = await runner.start(AgentSpec(prompt="Say two", scenario="three-turns"))
    assert session.warm_start and session.spawned_pid == warm.pid
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(session.agent.id)
    assert agent.id == warm.agent_id and agent.cwd == str(warm.cwd)
    assert agent.state == AgentState.DONE and agent.name == "say-two"
    assert agent.extra.get("warm") is True
    events = await store.read(agent_id=agent.id)
    assert [e.data["new"] for e in events if e.type == EventType.STATE_CHANGED] == [
        "starting",
        "running",
        "done",
    ]
    assert [e.data["text"] for e in events if e.type == EventType.USER_MESSAGE_SENT] == ["Say two"]
    assert [e.data["tool"] for e in events if e.type == EventType.TOOL_CALLED] == ["Bash", "Bash"]
    # and one more is warmed for the agent after it
    assert (await warm_one(runner)).agent_id != agent.id


async def test_other_options_start_cold(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))
    warm = await warm_one(runner)
    other = await runner.start(
        AgentSpec(prompt="Say one", scenario="three-turns", append_system_prompt="Be brief.")
    )
    assert not other.warm_start and other.agent.id != warm.agent_id
    assert other.spawned_pid != warm.pid
    await other.wait_finished(timeout=60)
    assert (await store.get_agent(other.agent.id)).state == AgentState.DONE


async def test_a_warm_process_spawned_otherwise_is_not_used(
    pooled: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, runner = pooled
    await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))
    warm = await warm_one(runner)
    # What the process would be given now differs from what it was given
    # (a setting read at spawn): it is stopped, the agent starts cold in its place.
    monkeypatch.setattr(runner.settings, "max_retries", 7)
    session = await runner.start(AgentSpec(prompt="Say two", scenario="three-turns"))
    assert not session.warm_start and session.agent.id == warm.agent_id
    assert "warm" not in session.agent.extra
    assert session.spawned_pid != warm.pid
    await session.wait_finished(timeout=60)
    assert (await store.get_agent(session.agent.id)).state == AgentState.DONE
    assert procs.wait_gone([warm.pid or 0], 10) == []


async def test_shutdown_stops_the_warm_processes_and_removes_their_workspaces(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))
    warm = await warm_one(runner)
    tree = [p.pid for p in procs.process_tree(warm.pid or 0)]
    assert tree
    await runner.refuse_starts(suspend=True)  # what `agentdeck down` does first
    assert procs.wait_gone(tree, 10) == []
    assert not warm.cwd.exists() and len(runner.warm) == 0
    assert [a.id for a in await store.list_agents(limit=100)] != [warm.agent_id]


async def test_no_pool_without_the_setting_nor_for_a_given_directory(
    tmp_path: Path, pooled: tuple[Store, Runner]
) -> None:
    store, runner = pooled
    (tmp_path / "here").mkdir()
    spec = AgentSpec(prompt="Say one", scenario="three-turns", cwd=str(tmp_path / "here"))
    await run_to_end(store, runner, spec)
    assert len(runner.warm) == 0 and not runner.warm._filling

    settings: Settings = make_settings(tmp_path / "off", warm_pool=0)
    settings.ensure_home()
    off_store = Store.open(settings.db_path)
    off = build_runner(off_store, settings, warm_pool=settings.warm_pool)
    try:
        await run_to_end(off_store, off, AgentSpec(prompt="Say one", scenario="three-turns"))
        assert len(off.warm) == 0 and not off.warm._filling
    finally:
        await off.shutdown()
        await off_store.close()


async def test_the_policy_still_decides_every_call_of_a_claimed_process(
    pooled: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = pooled
    profile = write_profile(tmp_path, deny=["Bash(rm:*)"])
    spec = AgentSpec(
        prompt="go", scenario=write_scenario(tmp_path, "echo hi", "rm x"), profile=profile
    )
    await run_to_end(store, runner, spec)
    warm = await warm_one(runner)
    session = await runner.start(spec)
    assert session.warm_start
    await session.wait_finished(timeout=60)
    decided = [
        (e.tool, str(e.decision)) for e in await store.read_audit() if e.agent_id == warm.agent_id
    ]
    assert decided == [("Bash", "allow"), ("Bash", "deny")]


def our_claude_codes() -> list[int]:
    import os

    import psutil

    return [
        p.pid
        for p in psutil.Process(os.getpid()).children(recursive=True)
        if procs.looks_like_claude(p.pid) and p.status() != psutil.STATUS_ZOMBIE
    ]


async def test_a_stop_while_the_next_one_boots_leaves_no_process(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    session = await runner.start(AgentSpec(prompt="Say one", scenario="three-turns"))
    await session.wait_finished(timeout=60)
    # the refill begins as the agent's turn ends: stopped at whatever step it is
    await runner.refuse_starts(suspend=True)
    assert len(runner.warm) == 0 and not runner.warm._filling
    assert our_claude_codes() == []
    workspaces = runner.settings.workspaces_dir
    assert [p.name for p in workspaces.iterdir()] == [session.agent.id]


async def test_the_next_one_boots_only_once_the_first_turn_is_over(
    pooled: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, runner = pooled
    prestart, seen = runner._prestart, []

    async def watched(template: AgentSpec) -> Warm | None:
        seen.append(session.turn_over.is_set())
        return await prestart(template)

    monkeypatch.setattr(runner, "_prestart", watched)
    session = await runner.start(AgentSpec(prompt="hello", scenario="chat"), keep_alive=True)
    # a kept-alive agent: once its first turn ends (it is idle), the next one boots
    assert await session.next_result(timeout=60) is not None
    warm = await warm_one(runner)
    assert seen == [True]
    assert warm.template == AgentSpec(prompt="", scenario="chat")
    await session.close()


async def test_the_pool_holds_size_processes_in_all_the_options_used_last_win(
    pooled: tuple[Store, Runner],
) -> None:
    store, runner = pooled
    await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))
    first = await warm_one(runner)
    brief = AgentSpec(prompt="Say one", scenario="three-turns", append_system_prompt="Be brief.")
    await run_to_end(store, runner, brief)

    async def replaced() -> Warm | None:
        warm = runner.warm._warm
        return warm[0] if len(warm) == 1 and warm[0] is not first else None

    second = await eventually(replaced, timeout=60, what="the warm one of the last options")
    assert second.template.append_system_prompt == "Be brief."
    assert procs.wait_gone([first.pid or 0], 10) == [] and not first.cwd.exists()


async def test_an_unclaimed_warm_process_goes_after_its_time(
    pooled: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdeck.runner import warm as warm_module

    store, runner = pooled
    monkeypatch.setattr(warm_module, "MAX_AGE_SECONDS", 0.5)
    await run_to_end(store, runner, AgentSpec(prompt="Say one", scenario="three-turns"))

    async def expired() -> bool:
        return not runner.warm._filling and len(runner.warm) == 0 and not runner.warm._stopping

    await eventually(expired, timeout=60, what="the warm process to expire")
    assert our_claude_codes() == []


@needs_bwrap
async def test_a_confined_agent_claims_the_warm_process_with_its_confinement(
    pooled: tuple[Store, Runner], tmp_path: Path
) -> None:
    """A profile that confines the whole process (the default where bubblewrap
    runs): the warm process boots inside a confinement set up for the reserved
    workspace, and the agent that claims it runs in it; what its proxy refuses
    from then on is in that agent's log."""
    store, runner = pooled
    profile = tmp_path / "boxed.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "boxed",
                "default": "allow",
                "sandbox": {
                    "mode": "process",
                    "required": True,
                    "network": {"mode": "allowlist", "allowed_domains": ["allowed.test"]},
                },
            }
        )
    )
    code = "import urllib.request as u; u.urlopen('http://not-allowed.test:9/', timeout=5)"
    spec = AgentSpec(
        prompt="go",
        scenario=write_scenario(tmp_path, f'{sys.executable} -c "{code}"'),
        profile=str(profile),
    )
    await run_to_end(store, runner, spec)
    warm = await warm_one(runner)
    assert warm.sandboxing is not None and warm.sandboxing.confinement is not None
    session = await runner.start(spec)
    assert session.warm_start and session.spawned_pid == warm.pid
    await session.wait_finished(timeout=60)
    agent = await store.get_agent(warm.agent_id)
    assert agent.state == AgentState.DONE and agent.extra["sandbox"] == "process"
    blocked = [
        e.data["target"]
        for e in await store.read(agent_id=agent.id)
        if e.type == EventType.SANDBOX_BLOCKED
    ]
    assert any("not-allowed.test" in target for target in blocked), blocked
