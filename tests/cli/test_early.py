"""An embedded ``agentdeck run`` spawns its Claude Code before the store is open
(``cli.early``), and its runner adopts that process only when it fits exactly;
a stop at any moment of that window leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil
import pytest

from agentdeck.cli.early import Early, spawn
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.runner import procs
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.daemon.test_stop_while_starting import silent_claude
from tests.support.deckcli import deck, deck_env
from tests.support.deckcli import spawn as spawn_deck
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SPEC = AgentSpec(prompt="Say hi", scenario="three-turns")


def silent_processes() -> list[psutil.Process]:
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.name() == "sleep" and "120" in p.cmdline():
                found.append(p)
        except psutil.Error:
            continue
    return found


async def test_an_embedded_run_adopts_the_claude_code_it_spawned_first(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "run", "--scenario", "three-turns", "Say hi", "--json")
    assert done.code == 0, done.err
    agent = done.json()["agent"]
    assert agent["state"] == "done"
    assert agent["extra"].get("warm") is True  # on the process spawned before the store opened
    home = Path(env["AGENTDECK_HOME"])
    assert home.stat().st_mode & 0o777 == 0o700  # made private, as ever
    # Its reserved workspace is the agent's: no other one was made.
    assert [p.name for p in (home / "workspaces").iterdir()] == [agent["id"]]
    async with Store.open(home / "agentdeck.db") as store:
        # Governed as a cold start is: the policy decided each tool call, before it ran.
        audit = [(e.tool, str(e.decision)) for e in await store.read_audit()]
        assert audit == [("Bash", "allow"), ("Bash", "allow")]
        events = await store.read(agent_id=agent["id"])
        assert [e.data["tool"] for e in events if e.type == EventType.TOOL_CALLED] == [
            "Bash",
            "Bash",
        ]
        stored = await store.get_agent(agent["id"])
        assert stored.extra.get("sandbox") == agent["extra"].get("sandbox")


async def test_a_process_spawned_otherwise_is_not_adopted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    early = await spawn(settings, SPEC)
    assert early is not None and procs.is_running(early.warm.pid)
    async with Store.open(settings.db_path) as store:
        runner = build_runner(store, settings)
        try:
            runner.adopt(early.warm, early.model)
            # A setting read at spawn differs now: the early process is not this
            # agent's; it is stopped and the agent starts cold (in its reserved place).
            monkeypatch.setattr(settings, "max_retries", 7)
            session = await runner.start(SPEC)
            assert not session.warm_start and session.spawned_pid != early.warm.pid
            await session.wait_finished(timeout=60)
            assert (await store.get_agent(session.agent.id)).state == AgentState.DONE
            assert procs.wait_gone([early.warm.pid or 0], 10) == []
        finally:
            await runner.shutdown()


async def test_an_early_process_never_handed_over_leaves_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    early = await spawn(settings, SPEC)
    assert isinstance(early, Early) and early.model is not None
    tree = [p.pid for p in procs.process_tree(early.warm.pid or 0)]
    await early.close()
    assert procs.wait_gone(tree, 10) == []
    assert list(settings.workspaces_dir.iterdir()) == []


async def test_a_stop_while_it_spawns_leaves_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, claude_cli_path=silent_claude(tmp_path))
    settings.ensure_home()
    others = {p.pid for p in silent_processes()}  # another test's, in this worker
    spawning = asyncio.create_task(spawn(settings, AgentSpec(prompt="hi")))

    async def booting() -> list[psutil.Process]:
        return [p for p in silent_processes() if p.pid not in others]

    ours = await eventually(booting, what="the early Claude Code spawned")
    spawning.cancel()
    try:
        early = await spawning
    except asyncio.CancelledError:
        early = None
    if early is not None:  # spawned before the cancel reached it: the caller closes it
        await early.close()
    assert psutil.wait_procs(ours, timeout=5)[1] == []
    assert list(settings.workspaces_dir.iterdir()) == []


async def test_ctrl_c_while_the_early_process_boots_leaves_nothing_starting(
    tmp_path: Path,
) -> None:
    env = deck_env(tmp_path, AGENTDECK_CLAUDE_CLI_PATH=str(silent_claude(tmp_path)))
    run = spawn_deck(env, "run", "--scenario", "three-turns", "Say hi", "--json")
    try:

        async def booting() -> list[psutil.Process]:
            me = psutil.Process(run.pid)
            return [
                p
                for p in me.children(recursive=True)
                if p.name() == "sleep" and "120" in p.cmdline()
            ]

        booted = await eventually(booting, what="the run's Claude Code booting")
        os.kill(run.pid, signal.SIGINT)
        run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert psutil.wait_procs(booted, timeout=5)[1] == []
    home = Path(env["AGENTDECK_HOME"])
    if (home / "agentdeck.db").exists():
        async with Store.open(home / "agentdeck.db") as store:
            agents = await store.list_agents()
            assert all(a.state is not AgentState.STARTING and a.pid is None for a in agents)
            live = {a.id for a in agents}
    else:
        live = set()
    # No workspace is left but a recorded agent's.
    workspaces = home / "workspaces"
    left = {p.name for p in workspaces.iterdir()} if workspaces.exists() else set()
    assert left <= live, left
