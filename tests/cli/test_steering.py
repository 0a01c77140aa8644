"""Steering across processes: what a user does from a second terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.events import EventType
from agentdeck.runner import procs
from agentdeck.store.store import Store
from tests.support.deckcli import deck, deck_env, spawn
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

LONG = ["run", "--scenario", "long-tool", "--allow", "Bash(python3:*)", "do the long job"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


Spawn = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def spawned(env: dict[str, str]) -> Iterator[Spawn]:
    """Start ``agentdeck`` processes; each is stopped and reaped after the test."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        proc = spawn(env, *args)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        finish(proc, timeout=10)


@pytest.fixture
async def store(env: dict[str, str]) -> AsyncIterator[Store]:
    """A second view of the same database, as another client would have."""
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    async with Store.open(home / "agentdeck.db") as s:
        yield s


async def tool_running(store: Store) -> Agent:
    """The agent once its tool process (the CLI's child) is up."""

    async def probe() -> Agent | None:
        for agent in await store.list_agents():
            events = await store.read(agent_id=agent.id, types=[EventType.TOOL_CALLED])
            if events and agent.pid and len(procs.alive(procs.process_tree(agent.pid))) >= 2:
                return agent
        return None

    return await eventually(probe, timeout=60, what="an agent running its tool")


def finish(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str, str]:
    if proc.stdout is None or proc.stdout.closed:
        return proc.returncode, "", ""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


async def test_interrupt_from_another_terminal(
    env: dict[str, str], store: Store, spawned: Spawn
) -> None:
    run = spawned(*LONG, "--json")
    agent = await tool_running(store)
    done = deck(env, "interrupt", agent.id, "--json")
    assert done.code == 0, done.err
    code, out, _ = finish(run)
    assert code == 1
    assert json.loads(out)["agent"]["state"] == "interrupted"
    (command,) = await store.list_commands(agent.id)
    assert command.kind == "interrupt" and command.claimed_by == f"pid:{run.pid}"


async def test_ctrl_c_interrupts_the_run(env: dict[str, str], store: Store, spawned: Spawn) -> None:
    run = spawned(*LONG)
    agent = await tool_running(store)
    os.kill(run.pid, signal.SIGINT)
    code, out, _ = finish(run)
    assert code == 1
    assert "interrupting" in out
    assert (await store.get_agent(agent.id)).state == AgentState.INTERRUPTED


async def test_a_crashed_supervisor_is_reconciled_then_resumed(
    env: dict[str, str], store: Store, spawned: Spawn
) -> None:
    run = spawned(*LONG)
    agent = await tool_running(store)
    tree = [p.pid for p in procs.process_tree(agent.pid or 0)]
    assert len(tree) >= 2  # the CLI and its tool
    run.kill()  # kill -9: no cleanup at all
    finish(run)

    done = deck(env, "kill", agent.id, "--json")
    assert done.code == 0, done.err
    assert done.json()["state"] == "killed"
    assert procs.wait_gone(tree, timeout=10) == []  # no orphans left behind

    resumed = deck(env, "resume", agent.id, "carry on", "--json")
    assert resumed.code == 0, resumed.err
    outcome = resumed.json()
    assert outcome["agent"]["id"] == agent.id and outcome["agent"]["state"] == "done"
    assert outcome["result"]["result"] == "The long job finished."


async def test_send_to_a_finished_agent_resumes_it(env: dict[str, str]) -> None:
    first = deck(env, "run", "--scenario", "chat", "hello", "--json")
    assert first.code == 0, first.err
    agent_id = first.json()["agent"]["id"]
    again = deck(env, "send", agent_id, "once again please", "--json")
    assert again.code == 0, again.err
    assert again.json()["result"]["result"] == "Hello again! This is my answer to your follow-up."
    assert again.json()["agent"]["session_id"] == first.json()["agent"]["session_id"]


async def test_logs_follow_until_the_agent_finishes(
    env: dict[str, str], store: Store, spawned: Spawn
) -> None:
    run = spawned(*LONG)
    agent = await tool_running(store)
    follower = spawned("logs", agent.id, "--follow")
    assert follower.poll() is None
    assert deck(env, "interrupt", agent.id).code == 0
    code, out, _ = finish(follower)
    finish(run)
    assert code == 0
    assert "Bash(python3" in out and "state interrupted" in out
