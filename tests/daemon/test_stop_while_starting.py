"""A stop asked for while agents are still starting takes effect at once: the
daemon stops within seconds, not at Claude Code's connect timeout, leaves no agent
``starting`` and no process behind; Ctrl-C in the demo's first seconds stops it
cleanly, with no error printed."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.runner import sandboxing
from agentdeck.store import Store
from tests.conftest import make_settings
from tests.support.deckcli import deck_argv, deck_env
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def silent_claude(tmp_path: Path) -> Path:
    """A Claude Code that starts and never answers (its connect would wait 60 s)."""
    script = tmp_path / "claude"
    script.write_text("#!/bin/sh\nexec sleep 120\n")
    script.chmod(0o755)
    return script


async def test_stopping_the_daemon_while_agents_start_takes_seconds(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, claude_cli_path=silent_claude(tmp_path), port=0)
    async with serving(settings) as served:
        ids = [
            (await served.deck._runner.start(AgentSpec(prompt="hi"), background=True)).agent.id
            for _ in range(2)
        ]
        me = psutil.Process()

        def silent() -> list[psutil.Process]:
            return [
                p for p in me.children(recursive=True)
                if p.name() == "sleep" and "120" in p.cmdline()
            ]  # fmt: skip

        async def both_started() -> list[psutil.Process]:
            return found if len(found := silent()) >= 2 else []

        started = await eventually(both_started, what="two Claude Code processes")
        stopping = time.monotonic()
    took = time.monotonic() - stopping
    assert took < 5, f"the daemon took {took:.1f} s to stop"
    gone = psutil.wait_procs(started, timeout=5)[1]
    assert gone == []  # no Claude Code left behind
    async with Store.open(settings.db_path) as store:
        agents = [await store.get_agent(i) for i in ids]
    assert [a.state for a in agents] == [AgentState.INTERRUPTED] * 2
    assert {a.last_error for a in agents} == {"stopped while starting"}


async def test_creations_under_way_when_the_daemon_stops_answer_503(tmp_path: Path) -> None:
    """Requests creating agents when the daemon is told to stop answer at once,
    in the error shape (503: the daemon is stopping), and leave no agent live."""
    settings = make_settings(
        tmp_path, claude_cli_path=silent_claude(tmp_path), max_concurrent_starts=2
    )
    async with serving(settings) as served:
        api = served.api()  # open until the answers are read, after the daemon stops
        creating = [
            asyncio.create_task(api.post("/api/agents", json={"prompt": f"hi {i}"}))
            for i in range(6)
        ]

        async def recorded() -> bool:
            return len(await served.deck._store.list_agents()) == 6

        await eventually(recorded, what="six agents starting")
    try:
        answers = await asyncio.gather(*creating)
    finally:
        await api.aclose()
    assert {a.status_code for a in answers} == {503}
    body = answers[0].json()
    assert body["error"]["status"] == 503
    assert "stopping" in body["error"]["message"]
    assert body["error"]["hint"]
    async with Store.open(settings.db_path) as store:
        agents = await store.list_agents()
    assert {a.state for a in agents} == {AgentState.INTERRUPTED}
    assert all(a.pid is None for a in agents)


@pytest.mark.parametrize("started", [True, False], ids=["process-up", "before-its-process"])
async def test_a_daemon_stopping_mid_start_carries_on_an_agent_that_resumes(
    tmp_path: Path, started: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the stop reaches the start as an abort (its process is up) or as a
    cancellation (it is not yet: held here in the sandbox's preparation), an agent
    that resumes on restart is marked to be started again, not left interrupted."""
    settings = make_settings(tmp_path, claude_cli_path=silent_claude(tmp_path), port=0)
    preparing = asyncio.Event()
    if not started:

        async def held_prepare(*args: object, **kwargs: object) -> None:
            preparing.set()
            await asyncio.Event().wait()  # until the stop cancels the start

        monkeypatch.setattr(sandboxing, "prepare", held_prepare)
    async with serving(settings) as served:
        session = await served.deck._runner.start(
            AgentSpec(prompt="hi", resume_on_restart=True), background=True
        )
        me = psutil.Process()

        async def its_process() -> list[psutil.Process]:
            return [p for p in me.children(recursive=True) if p.name() == "sleep"]

        if started:
            await eventually(its_process, what="its Claude Code process")
        else:
            await asyncio.wait_for(preparing.wait(), 30)
    async with Store.open(settings.db_path) as store:
        agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.INTERRUPTED
    assert agent.extra.get("resume_at_start") is True
    assert agent.last_error and "carries on" in agent.last_error


def _claude_processes(pid: int) -> list[psutil.Process]:
    """The bundled Claude Code processes under ``pid`` (sandboxed or not)."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any("_bundled/claude" in part for part in child.cmdline()):
                found.append(child)
    return found


def _demo_waits(db: Path) -> bool:
    """The demo's lead waits for its workers and one worker waits for an answer."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            states = {s for (s,) in conn.execute("SELECT state FROM agents")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return {"awaiting_agents", "awaiting_input"} <= states


@pytest.mark.parametrize("when", ["crew-starting", "crew-waiting"])
async def test_ctrl_c_in_the_demo_stops_it_cleanly(tmp_path: Path, when: str) -> None:
    """In its first seconds (agents still starting) and once the lead waits for its
    workers and a worker for an answer (tool calls that cannot end by themselves):
    Ctrl-C takes effect in seconds, prints no error, and leaves every agent final."""
    env = deck_env(tmp_path)
    db = Path(env["AGENTDECK_HOME"]) / "demo" / "agentdeck.db"
    proc = await asyncio.to_thread(
        functools.partial(
            subprocess.Popen, deck_argv("demo", "--port", "0"), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    )  # fmt: skip
    try:
        assert proc.stdout is not None

        async def crew_starting() -> list[psutil.Process]:
            return _claude_processes(proc.pid)

        async def crew_waiting() -> bool:
            return await asyncio.to_thread(_demo_waits, db)

        if when == "crew-starting":  # Claude Code processes exist, the agents are not up
            await eventually(crew_starting, timeout=60, what="the demo's crew to start")
        else:
            await eventually(crew_waiting, timeout=60, what="the lead and a worker to wait")
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        asked = time.monotonic()
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
        took = time.monotonic() - asked
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(proc.wait)
    assert took < 10, f"Ctrl-C took {took:.1f} s"
    assert proc.returncode == 0, err
    assert "error" not in err.lower() and "traceback" not in err.lower(), err
    assert "did not stop" not in err, err
    assert "demo stopped" in out
    async with Store.open(db) as store:
        agents = await store.list_agents(limit=50)
    assert agents and all(a.state.is_final for a in agents), [(a.name, a.state) for a in agents]
    assert all(a.pid is None for a in agents)
