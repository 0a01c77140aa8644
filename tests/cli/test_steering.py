"""Steering across processes: what a user does from a second terminal."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.runner import procs
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.deckcli import deck, deck_env, spawn
from tests.support.served import serving
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


def busy(root: Path, first: list[dict[str, object]]) -> Path:
    """``first`` (requests that take a while, ending in ANSWER-TO-THE-FIRST), then
    answers to follow-ups that ask SECOND-ASK, then THIRD-ASK."""
    path = root / "busy.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "busy",
                "turns": [
                    *first,
                    {
                        "when": {"user_text_contains": "SECOND-ASK"},
                        "reply": [{"text": "ANSWER-TO-THE-SECOND"}],
                    },
                    {
                        "when": {"user_text_contains": "THIRD-ASK"},
                        "reply": [{"text": "ANSWER-TO-THE-THIRD"}],
                    },
                ],
            }
        )
    )
    return path


FIRST = {"reply": [{"text": "ANSWER-TO-THE-FIRST"}]}
SLOW_TEXT = [{**FIRST, "delay": 4}]
SLOW_TOOL = [
    {
        "reply": [
            {
                "tool_use": {
                    "name": "Bash",
                    "input": {
                        "command": "python3 -c 'import time; time.sleep(4)'",
                        "description": "wait",
                    },
                }
            }
        ]
    },
    FIRST,
]


async def busy_agent(served: Any, tmp_path: Path, first: list[dict[str, object]]) -> Agent:
    """A kept-alive agent whose first turn is under way: the model was asked."""
    session = await served.deck._runner.start(
        AgentSpec(
            prompt="the first ask", scenario=str(busy(tmp_path, first)), allow=("Bash(python3:*)",)
        ),
        keep_alive=True,
    )
    model = served.deck._runner.scripted_models()["busy"]

    async def asked() -> bool:
        return any(r.path.endswith("/messages") for r in model.requests)

    await eventually(asked, what="the agent busy with its first ask")
    agent: Agent = session.agent
    assert agent.state.is_busy
    return agent


async def test_send_to_a_busy_agent_prints_the_answer_to_what_it_sent(
    settings: Settings, tmp_path: Path, env: dict[str, str]
) -> None:
    """Its model's last request is under way: the message waits for the next turn."""
    async with serving(settings) as served:
        agent = await busy_agent(served, tmp_path, SLOW_TEXT)
        sent = await asyncio.to_thread(deck, env, "send", agent.id, "SECOND-ASK", "--json")
        assert sent.code == 0, sent.err
        assert sent.json()["result"]["result"] == "ANSWER-TO-THE-SECOND"
        turns = await served.deck._store.read(agent_id=agent.id, types=[EventType.TURN_COMPLETED])
        assert [t.data["result"] for t in turns] == ["ANSWER-TO-THE-FIRST", "ANSWER-TO-THE-SECOND"]

        # Idle now: the turn it starts answers it, as before.
        shown = await asyncio.to_thread(deck, env, "send", agent.id, "THIRD-ASK")
        assert shown.code == 0, shown.err
        assert "ANSWER-TO-THE-THIRD" in shown.out and "ANSWER-TO-THE-SECOND" not in shown.out


async def test_send_mid_tool_call_is_answered_in_that_turn(
    settings: Settings, tmp_path: Path, env: dict[str, str]
) -> None:
    """Claude Code adds a message that comes during a tool call to the request that
    carries the tool's result: that turn answers it, and `send` does not wait on."""
    async with serving(settings) as served:
        agent = await busy_agent(served, tmp_path, SLOW_TOOL)
        sent = await asyncio.to_thread(deck, env, "send", agent.id, "a note", "--json", timeout=60)
        assert sent.code == 0, sent.err
        assert sent.json()["result"]["result"] == "ANSWER-TO-THE-FIRST"
        model = served.deck._runner.scripted_models()["busy"]
        last = [r.body for r in model.requests if r.path.endswith("/messages")][-1]
        assert "a note" in json.dumps(last["messages"][-1]), "the turn's last request had it"


async def test_send_no_wait_says_queued_to_a_busy_agent(
    settings: Settings, tmp_path: Path, env: dict[str, str]
) -> None:
    async with serving(settings) as served:
        agent = await busy_agent(served, tmp_path, SLOW_TEXT)
        queued = await asyncio.to_thread(deck, env, "send", agent.id, "SECOND-ASK", "--no-wait")
        assert queued.code == 0, queued.err
        assert queued.out.startswith(f"queued for {agent.id}")

        async def answered() -> bool:
            found = await served.deck._store.get_agent(agent.id)
            return found.extra.get("last_result") == "ANSWER-TO-THE-SECOND"

        await eventually(answered, what="the queued message answered")
        now = await asyncio.to_thread(
            deck, env, "send", agent.id, "SECOND-ASK", "--no-wait", "--json"
        )
        assert now.code == 0, now.err
        assert now.json()["id"] == agent.id


# Busy long enough for a second `agentdeck` process to start on a loaded machine.
SLOWER_TEXT = [{**FIRST, "delay": 15}]
# A first answer the run never gets to: the test kills the run once the message is
# taken, so its length costs nothing, and a `send` slow to start on a loaded machine
# still finds the run busy (15 s was not always enough in CI).
HELD_TEXT = [{**FIRST, "delay": 120}]


async def running_elsewhere(store: Store) -> Agent:
    """The agent of an `agentdeck run` in another terminal, once its model was asked."""

    async def probe() -> Agent | None:
        for agent in await store.list_agents():
            if agent.state == AgentState.RUNNING and agent.pid:
                return agent
        return None

    return await eventually(probe, timeout=60, what="the other terminal's agent running")


async def test_send_without_a_daemon_prints_the_answer_to_what_it_sent(
    env: dict[str, str], store: Store, spawned: Spawn, tmp_path: Path
) -> None:
    """No daemon: the agent is an `agentdeck run` in another terminal, busy with its
    first ask; `send` used to say "sent to …" and exit without the answer."""
    run = spawned("run", "--scenario", str(busy(tmp_path, SLOWER_TEXT)), "the first ask", "--json")
    agent = await running_elsewhere(store)
    sent = await asyncio.to_thread(deck, env, "send", agent.id, "SECOND-ASK", "--json")
    assert sent.code == 0, sent.err
    assert sent.json()["result"]["result"] == "ANSWER-TO-THE-SECOND"
    code, out, err = finish(run)
    assert code == 0, err
    turns = await store.read(agent_id=agent.id, types=[EventType.TURN_COMPLETED])
    assert [t.data["result"] for t in turns] == ["ANSWER-TO-THE-FIRST", "ANSWER-TO-THE-SECOND"]


async def test_send_no_wait_without_a_daemon_says_queued(
    env: dict[str, str], store: Store, spawned: Spawn, tmp_path: Path
) -> None:
    run = spawned("run", "--scenario", str(busy(tmp_path, SLOWER_TEXT)), "the first ask")
    agent = await running_elsewhere(store)
    queued = await asyncio.to_thread(deck, env, "send", agent.id, "SECOND-ASK", "--no-wait")
    assert queued.code == 0, queued.err
    assert queued.out.startswith(f"queued for {agent.id}")
    assert "ANSWER-TO-THE-SECOND" not in queued.out
    code, out, err = finish(run)
    assert code == 0, err


async def test_send_without_a_daemon_says_when_the_supervisor_dies_first(
    env: dict[str, str], store: Store, spawned: Spawn, tmp_path: Path
) -> None:
    run = spawned("run", "--scenario", str(busy(tmp_path, HELD_TEXT)), "the first ask")
    agent = await running_elsewhere(store)
    sender = spawned("send", agent.id, "SECOND-ASK")

    async def taken() -> bool:
        return any(c.claimed_by for c in await store.list_commands(agent.id))

    await eventually(taken, timeout=90, what="the message taken by the run")
    run.kill()  # kill -9: the agent's row stays live, nobody will answer
    code, out, err = finish(sender)
    assert code == 1, out + err
    assert f"supervising process ({run.pid}) ended before it answered" in err
    assert "Traceback" not in err
