"""Interrupt, kill and stale-agent reconciliation, checked against the process table."""

from __future__ import annotations

import psutil
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.errors import NotFound
from agentdeck.runner import procs
from agentdeck.runner.runner import Runner
from agentdeck.runner.steering import Steering, reconcile_stale
from agentdeck.store.store import Store
from tests.support.waiting import eventually, wait_event

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

LONG = AgentSpec(prompt="run the long job", scenario="long-tool", allow=("Bash(python3:*)",))


def sleeper_pids(root: int) -> list[int]:
    """The tool process (python3 … time.sleep(60)) among the CLI's descendants."""
    return [
        p.pid
        for p in procs.process_tree(root)
        if "time.sleep(60)" in " ".join(_cmdline(p)) and p.name().startswith("python")
    ]


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


async def running_sleeper(store: Store, runner: Runner) -> tuple[int, list[int]]:
    session = await runner.start(LONG)
    await wait_event(store, session.agent.id, EventType.TOOL_CALLED)
    cli = session.pid
    assert cli is not None

    async def found() -> list[int]:
        return sleeper_pids(cli)

    return cli, await eventually(found, timeout=30, what="the tool's python process")


async def test_interrupt_during_a_long_tool_stops_the_tool(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(LONG, keep_alive=True)
    await wait_event(store, session.agent.id, EventType.TOOL_CALLED)
    cli = session.pid
    assert cli is not None

    async def found() -> list[int]:
        return sleeper_pids(cli)

    tool_pids = await eventually(found, timeout=30, what="the tool's python process")
    await session.interrupt()
    result = await session.next_result(timeout=15)
    assert result is not None
    assert result.is_error and result.terminal_reason == "aborted_tools"
    assert procs.wait_gone(tool_pids, timeout=10) == []
    # The process survives an interrupt and takes the next message.
    assert session.agent.state == AgentState.IDLE and procs.is_running(cli)
    assert session.agent.last_error is None


async def test_interrupt_ends_a_one_shot_run_as_interrupted(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    session = await runner.start(LONG)
    await wait_event(store, session.agent.id, EventType.TOOL_CALLED)
    await Steering(store, runner).interrupt(session.agent.id)
    await session.wait_finished(timeout=20)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.INTERRUPTED and agent.pid is None


async def test_kill_leaves_no_orphan_processes(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    cli, tool_pids = await running_sleeper(store, runner)
    tree = [p.pid for p in procs.process_tree(cli)]
    assert set(tool_pids) <= set(tree)

    (agent_id,) = runner.sessions
    killed = await Steering(store, runner).kill(agent_id)
    assert killed.state == AgentState.KILLED
    assert procs.wait_gone(tree, timeout=10) == []
    # Nothing anywhere on the machine still runs the tool.
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if p.pid in tree and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert leftovers == []
    agent = await store.get_agent(agent_id)
    assert agent.state == AgentState.KILLED and agent.pid is None
    states = [
        e.data["new"]
        for e in await store.read(agent_id=agent_id)
        if e.type == EventType.STATE_CHANGED
    ]
    assert states[-1] == "killed"


async def test_a_stale_live_agent_is_reconciled_and_its_processes_stopped(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    cli, tool_pids = await running_sleeper(store, runner)
    (agent_id,) = runner.sessions
    # Pretend the supervisor died: a row that says live, owned by a dead pid.
    row = await store.get_agent(agent_id)
    dead_owner = psutil.Popen(["true"])
    dead_owner.wait()
    await store.save_agent(row.with_changes(owner_pid=dead_owner.pid))

    agent = await reconcile_stale(store, await store.get_agent(agent_id), grace=1.0)
    assert agent.state == AgentState.INTERRUPTED
    assert procs.wait_gone([cli, *tool_pids], timeout=10) == []


async def test_a_message_sent_while_the_agent_starts_follows_its_prompt(
    deck: tuple[Store, Runner],
) -> None:
    """Starting takes a while (a sandbox, a slow machine): a message that arrives
    meanwhile is neither refused nor sent before the first prompt. Claude Code asks
    the model about it in a turn of its own, or (still booting when it came: a loaded
    machine) in the first turn, one prompt with the first one: either is right."""
    import asyncio

    from agentdeck.mockmodel.selection import user_text

    store, runner = deck
    starting = asyncio.create_task(
        runner.start(AgentSpec(prompt="hello", scenario="chat"), keep_alive=True)
    )

    async def live_while_starting() -> object:
        for agent in await store.list_agents():
            session = runner.live(agent.id)
            if session is not None and session._client is None:
                return session
        return None

    session = await eventually(live_while_starting, timeout=30, what="a session still starting")
    await session.send("tell me again")  # type: ignore[attr-defined]
    started = await starting
    assert started is session
    (model,) = runner.scripted_models().values()

    async def asked_again() -> str | None:
        for request in model.requests:
            messages = request.body.get("messages") if isinstance(request.body, dict) else None
            said = "\n".join(filter(None, (user_text(m) for m in messages or [])))
            if "tell me again" in said:
                return said
        return None

    said = await eventually(asked_again, timeout=60, what="the model asked the message")
    assert said.index("hello") < said.index("tell me again")
    await eventually(
        lambda: _said(store, session.agent.id, 1),  # type: ignore[attr-defined]
        timeout=60,
        what="its answer",
    )
    events = await store.read(agent_id=started.agent.id)
    texts = [e.data["text"] for e in events if e.type == EventType.USER_MESSAGE_SENT]
    assert texts == ["hello", "tell me again"]


async def _said(store: Store, agent_id: str, count: int) -> bool | None:
    events = await store.read(agent_id=agent_id)
    turns = [e for e in events if e.type == EventType.TURN_COMPLETED]
    return True if len(turns) >= count else None


async def test_a_message_as_soon_as_the_agent_exists_finds_its_session(
    deck: tuple[Store, Runner], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new agent's row is on the board (a sibling can name it, a person can click
    it) before its start is over: a message sent the moment it appears goes to its
    session, after its prompt; it is not taken for an orphan to mark interrupted."""
    import asyncio

    store, runner = deck
    scoped = runner.daily.scoped
    loop = asyncio.get_running_loop()
    sends: list[asyncio.Task[object]] = []

    async def slow_reads(agent: Agent) -> object:
        """The start's budget reads. If the agent's row is already on the board (the
        order this test guards against), they last until the message sent the moment
        it appeared has been handled: the gap made certain, not left to timing."""
        try:
            await store.get_agent(agent.id)
        except NotFound:
            return await scoped(agent)
        await eventually(
            lambda: _true(bool(sends) and sends[0].done()), what="the message sent as it appeared"
        )
        return await scoped(agent)

    monkeypatch.setattr(runner.daily, "scoped", slow_reads)

    def send(agent_id: str) -> None:
        sends.append(loop.create_task(Steering(store, runner).send(agent_id, "tell me again")))

    def on_commit(events: list[StoredEvent]) -> None:  # the writer thread
        for event in events:
            if event.type == EventType.AGENT_SPAWNED:
                loop.call_soon_threadsafe(send, event.agent_id)

    unsubscribe = store.subscribe(on_commit)
    try:
        session = await runner.start(AgentSpec(prompt="hello", scenario="chat"), keep_alive=True)
        await eventually(lambda: _true(sends), what="the message sent")
        await sends[0]
    finally:
        unsubscribe()
    await eventually(lambda: _said(store, session.agent.id, 1), timeout=60, what="its answer")
    events = await store.read(agent_id=session.agent.id)
    texts = [e.data["text"] for e in events if e.type == EventType.USER_MESSAGE_SENT]
    assert texts == ["hello", "tell me again"]
    assert [e for e in events if e.type == EventType.ERROR_OCCURRED] == []
    states = [e.data["new"] for e in events if e.type == EventType.STATE_CHANGED]
    assert "interrupted" not in states


async def _true(value: object) -> object:
    return value
