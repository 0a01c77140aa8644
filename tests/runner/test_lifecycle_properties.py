"""No illegal state change is ever recorded.

Random sequences of what happens to agents — starts, turns, follow-ups, tool
calls, permission prompts, interrupts, kills, crashes (the supervisor gone) and
restarts — go through ``transition()`` itself and through the code that records
states without a process of its own: the hook bridge (hand-started sessions),
steering's reconciliation and kill of an agent whose supervisor is gone, and
the runner's settling of what it leaves live. Afterwards every ``StateChanged``
in the log follows the state before it and is one the lifecycle allows, the row
ends where the log does, and nothing was refused (every caller asks only for
what the table allows). The sessions' own path (a real Claude Code, the
scripted model) is ``test_lifecycle.py``'s and the steering tests'.

Deterministic (derandomized, no example database) and a few seconds long.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdeck.core.agent import (
    FINAL_STATES,
    LIVE_STATES,
    Agent,
    AgentSource,
    AgentSpec,
    AgentState,
    can_transition,
)
from agentdeck.core.events import EventType, StateChanged, spawned_events
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.daemon.compose import build_runner
from agentdeck.hooks.bridge import HookBridge
from agentdeck.hooks.protocol import HookRequest
from agentdeck.runner.steering import Steering, reconcile_stale
from agentdeck.store.store import Store
from tests.conftest import make_settings

STATES = list(AgentState)
PROPERTY = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# A store and a runner for each example: fewer examples, each with many agents.
WITH_A_STORE = settings(PROPERTY, max_examples=20)


def check_log(changes: list[tuple[str | None, str]], final: AgentState) -> None:
    """The log's state changes chain, each one allowed; the row ends where they do."""
    state: str | None = None
    for old, new in changes:
        if old is not None:
            assert old == state, f"{old} -> {new} after {state}: {changes}"
            assert can_transition(AgentState(old), AgentState(new)), f"{old} -> {new}: {changes}"
        state = new
    assert state == str(final), (changes, final)


async def logged(store: Store, agent_id: str) -> list[tuple[str | None, str]]:
    events = await store.read(agent_id=agent_id, types=[EventType.STATE_CHANGED], limit=10_000)
    return [(e.data["old"], e.data["new"]) for e in events]


def dead_pid() -> int:
    gone = psutil.Popen(["true"])
    gone.wait()
    return gone.pid


# -- transition() itself -------------------------------------------------------------


def an_agent(state: AgentState) -> Agent:
    return Agent(
        id="a1",
        name="a",
        state=state,
        spec=AgentSpec(prompt="hi"),
        cwd="/w",
        created_at=0.0,
        updated_at=0.0,
    )


@PROPERTY
@given(st.sampled_from(STATES), st.lists(st.sampled_from(STATES), max_size=60))
def test_transition_moves_only_along_the_table(start: AgentState, asked: list[AgentState]) -> None:
    agent = an_agent(start)
    events: list[StateChanged] = []
    for ts, new in enumerate(asked):
        moved = transition(agent, new, ts=float(ts), reason="r")
        if new == agent.state:
            assert moved.agent is agent and not moved.events and not moved.refused
        elif can_transition(agent.state, new):
            assert moved.agent.state == new and not moved.refused
            (event,) = moved.events
            assert (event.old, event.new, event.ts) == (str(agent.state), str(new), float(ts))
        else:  # refused: nothing changes, nothing is said
            assert moved.refused and moved.agent is agent and not moved.events
        events += moved.events
        agent = moved.agent
    check_log([(None, str(start))] + [(e.old, e.new) for e in events], agent.state)


def test_every_state_can_end_and_every_end_can_come_back() -> None:
    """What users expect of the table: a live agent can always be stopped (interrupted,
    killed, failed, done); a finished one comes back only through a resume (started
    here, or queued for a runner host); a queued one starts or ends (killed,
    interrupted, failed)."""
    for state in LIVE_STATES:
        assert all(can_transition(state, end) for end in FINAL_STATES), state
    for end in FINAL_STATES:
        assert [s for s in STATES if s != end and can_transition(end, s)] == [
            AgentState.QUEUED,
            AgentState.STARTING,
        ]
    queued = AgentState.QUEUED
    assert [s for s in STATES if s != queued and can_transition(queued, s)] == [
        AgentState.STARTING,
        AgentState.ERROR,
        AgentState.INTERRUPTED,
        AgentState.KILLED,
    ]
    assert not queued.is_live and not queued.is_final and queued.is_busy


# -- the callers that record states without a process ---------------------------------

HOOKS = ["start", "prompt", "tool", "returned", "permission", "stop", "end", "crash"]


def hook(name: str, session: str, project: str, pid: int) -> HookRequest | None:
    fields: dict[str, Any] = {
        "start": {"hook_event_name": "SessionStart", "source": "startup"},
        "prompt": {"hook_event_name": "UserPromptSubmit", "prompt": "list the files"},
        "tool": {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "README.md"},
            "tool_use_id": "toolu_1",
        },
        "returned": {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "README.md"},
            "tool_use_id": "toolu_1",
            "tool_response": {"content": "hello"},
        },
        "permission": {
            "hook_event_name": "Notification",
            "notification_type": "permission_prompt",
            "message": "Claude needs your permission to use Bash",
        },
        "stop": {"hook_event_name": "Stop", "last_assistant_message": "done"},
        "end": {"hook_event_name": "SessionEnd", "reason": "other"},
    }.get(name, {})
    if not fields:
        return None
    event = {"session_id": session, "cwd": project, **fields}
    return HookRequest(event=event, env={"CLAUDE_PID": str(pid)})


async def hand_started(base: Path, sequences: list[list[str]]) -> None:
    """Hand-started sessions report through hooks; a crash is their process gone
    and the daemon restarting (a new bridge reconciles what the log still has
    live); a hook after an end is the session resumed (``claude --resume``)."""
    settings = make_settings(base)
    settings.ensure_home()
    project = base / "project"
    project.mkdir()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        pid = dead_pid()  # reports its process as gone: a crash finds nobody owning it
        for n, sequence in enumerate(sequences):
            session = f"prop-{n:04d}-{time.time_ns()}"
            bridge = HookBridge(store, runner.governor, runner.memory)
            for name in sequence:
                request = hook(name, session, str(project), pid)
                if request is not None:
                    await bridge.handle(request)
                    continue
                agent = await store.agent_for_session(session, AgentSource.EXTERNAL)
                if agent is not None:
                    await reconcile_stale(store, agent, grace=0.1)
                bridge = HookBridge(store, runner.governor, runner.memory)  # the daemon anew
            agent = await store.agent_for_session(session, AgentSource.EXTERNAL)
            if agent is not None:
                check_log(await logged(store, agent.id), agent.state)
    finally:
        await runner.shutdown()
        await store.close()


@WITH_A_STORE
@given(st.lists(st.lists(st.sampled_from(HOOKS), min_size=1, max_size=14), max_size=12))
def test_hand_started_sessions_record_only_legal_changes(sequences: list[list[str]]) -> None:
    refused = REFUSALS.total
    with tempfile.TemporaryDirectory() as base:
        asyncio.run(hand_started(Path(base), sequences))
    assert REFUSALS.total == refused, REFUSALS.as_dict()


LIVE = sorted(LIVE_STATES)
ORPHANS = ["kill", "interrupt", "crash", "runner-stops"]


async def orphaned(base: Path, cases: list[tuple[list[AgentState], str]]) -> None:
    """Agents the runner supervised, walked through live states along the table,
    then their supervisor is gone: a kill or an interrupt steers them, a restart
    reconciles them, or the runner stopping settles them."""
    settings = make_settings(base)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    ids: list[str] = []
    try:
        gone = dead_pid()
        for n, (path, what) in enumerate(cases):
            now = time.time()
            owner = os.getpid() if what == "runner-stops" else gone
            agent = Agent(
                id=f"orphan{n:04d}{time.time_ns() % 10**6:06d}",
                name=f"orphan-{n}",
                state=AgentState.STARTING,
                spec=AgentSpec(prompt="hi"),
                cwd=str(base),
                created_at=now,
                updated_at=now,
                owner_pid=owner,
            )
            await store.record(spawned_events(agent), agent)
            for state in path:  # as a session would record them: only legal ones
                moved = transition(agent, state, ts=time.time())
                if not moved.refused:
                    agent = moved.agent
                    await store.record(list(moved.events), agent)
            ids.append(agent.id)
            steering = Steering(store, runner)
            if what == "kill":
                await steering.kill(agent.id)
            elif what == "interrupt":
                await steering.interrupt(agent.id)
            elif what == "crash":
                await reconcile_stale(store, agent, grace=0.1)
        await runner.shutdown()  # settles those it still owns
        for agent_id in ids:
            agent = await store.get_agent(agent_id)
            assert agent.state.is_final, agent
            check_log(await logged(store, agent_id), agent.state)
    finally:
        await runner.shutdown()
        await store.close()


@WITH_A_STORE
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(LIVE), max_size=6), st.sampled_from(ORPHANS)),
        min_size=1,
        max_size=12,
    )
)
def test_agents_whose_supervisor_is_gone_end_legally(
    cases: list[tuple[list[AgentState], str]],
) -> None:
    refused = REFUSALS.total
    with tempfile.TemporaryDirectory() as base:
        asyncio.run(orphaned(Path(base), cases))
    assert REFUSALS.total == refused, REFUSALS.as_dict()
