"""One suite of operations against both implementations of the Deck interface.

``local``: the daemon's Deck in this process (the CLI's embedded mode), on its own
home. ``remote``: ``RemoteDeck`` over the HTTP API of a real daemon (``agentdeck
up`` in a subprocess) on another home. Each test runs once per implementation with
the same calls and the same expectations: the same core records come back and the
same error classes are raised. Agents run the real Claude Code CLI against the
scripted model. One deck of each kind serves the whole module.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import yaml

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.deck import Deck
from agentdeck.core.events import EventType, StoredEvent
from agentdeck.errors import InvalidState, NotFound, UsageError
from tests.contract.helpers import SETTLE_SECONDS, followed, idle_after, settled, unique
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

ROOT = Path(__file__).resolve().parents[2]


# -- the interface ------------------------------------------------------------------------


def test_both_implementations_satisfy_the_interface() -> None:
    """mypy: the daemon's Deck (in-process) and ``RemoteDeck`` are each a
    ``core.deck.Deck`` (the ``_is_a_deck`` functions of serve.py and client/deck)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "src/agentdeck/serve.py", "src/agentdeck/client/deck"],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- agents -------------------------------------------------------------------------------


async def test_an_agent_is_started_listed_steered_followed_and_killed(deck: Deck) -> None:
    name = unique("chat")
    started = await deck.create_agent(AgentSpec(prompt="hello", name=name, scenario="chat"))
    assert isinstance(started, Agent)
    assert (started.name, started.spec.scenario, started.spec.prompt) == (name, "chat", "hello")
    assert started.state in (AgentState.STARTING, AgentState.RUNNING, AgentState.IDLE)

    first = await settled(deck, started.id, idle_after(1))
    assert first.extra["last_result"] == "Hello! I am the scripted model. Ask me anything."
    assert [a.id for a in await deck.list_agents(text=name)] == [started.id]

    async def listed_idle() -> bool:
        # The live session says idle a moment before its row is committed so: a
        # listing by state reads the rows (a flake on a loaded machine otherwise).
        return started.id in [a.id for a in await deck.list_agents(states=[AgentState.IDLE])]

    await eventually(listed_idle, timeout=SETTLE_SECONDS, what="listed as idle")
    assert (await deck.get_agent(started.id[:8])).id == started.id
    assert (await deck.get_agent(name)).id == started.id

    sent = await deck.send(started.id, "hello again")
    assert sent.id == started.id
    second = await settled(deck, started.id, idle_after(2))
    assert second.extra["last_result"] == "Hello again! This is my answer to your follow-up."

    async def both_turns() -> list[StoredEvent] | None:
        # The agent's row may say idle before its last events are committed.
        found = await deck.events(agent_id=started.id)
        ended = [e.type for e in found].count(EventType.TURN_COMPLETED) == 2
        return found if ended else None

    events = await eventually(both_turns, timeout=SETTLE_SECONDS, what="both turns logged")
    assert all(isinstance(e, StoredEvent) for e in events)
    assert [e.id for e in events] == sorted(e.id for e in events)
    said = [e.data["text"] for e in events if e.type == EventType.USER_MESSAGE_SENT]
    assert said == ["hello", "hello again"]
    assert (await deck.events(after=events[-2].id, agent_id=started.id))[0] == events[-1]
    assert await deck.events(agent_id=started.id, limit=2) == events[:2]
    assert await deck.events(after=events[0].id - 1, limit=1) == events[:1]  # every agent's
    tail = await deck.events_before(agent_id=started.id, before=events[-1].id + 1, limit=2)
    assert tail == events[-2:]
    # An agent is named for its log as anywhere else: by an id prefix or its name.
    assert await deck.events(agent_id=started.id[:8], limit=2) == events[:2]
    assert await deck.events_before(agent_id=name, before=events[-1].id + 1, limit=2) == tail
    assert await deck.events_before(agent_id=started.id, before=events[0].id) == []
    assert await deck.asks(agent_id=name) == []  # a known agent that asked nothing
    assert await deck.last_event_id() >= events[-1].id

    # The live feed gives the same events, in the same order, as the log.
    live = await followed(deck, started.id, until=lambda seen: len(seen) >= len(events))
    assert live[: len(events)] == events

    killed = await deck.kill(started.id)
    assert killed.id == started.id
    await settled(deck, started.id, lambda a: a.state is AgentState.KILLED)
    with pytest.raises(InvalidState):  # an ended agent has no turn to stop
        await deck.interrupt(started.id)
    with pytest.raises(InvalidState):
        await deck.kill(started.id)

    archived = await deck.archive(started.id)
    assert archived.extra.get("archived", True)
    assert await deck.list_agents(text=name) == []
    assert [a.id for a in await deck.list_agents(text=name, include_archived=True)] == [started.id]
    await deck.archive(started.id, archived=False)
    assert [a.id for a in await deck.list_agents(text=name)] == [started.id]


async def test_a_turn_is_interrupted_and_an_ended_agent_resumed_and_forked(deck: Deck) -> None:
    spec = AgentSpec(
        prompt="run the job", name=unique("long"), scenario="long-tool", allow=("Bash(python3:*)",)
    )
    agent = await deck.create_agent(spec)
    await settled(deck, agent.id, lambda a: a.current_tool == "Bash")
    assert (await deck.interrupt(agent.id)).id == agent.id
    await settled(deck, agent.id, lambda a: a.state is AgentState.IDLE)  # kept alive

    with pytest.raises(InvalidState):  # a live agent is sent a message, not resumed
        await deck.resume(agent.id, "carry on")
    await deck.kill(agent.id)
    await settled(deck, agent.id, lambda a: a.state is AgentState.KILLED)
    resumed = await deck.resume(agent.id, "carry on")
    assert resumed.id == agent.id
    done = await settled(deck, agent.id, lambda a: a.state is AgentState.IDLE)
    assert done.extra["last_result"] == "The long job finished."

    await deck.kill(agent.id)
    await settled(deck, agent.id, lambda a: a.state is AgentState.KILLED)
    forked = await deck.resume(agent.id, "a branch", fork=True)
    assert forked.id != agent.id and forked.extra["forked_from"] == agent.id
    await settled(deck, forked.id, lambda a: not a.state.is_busy)
    await deck.kill(forked.id)
    assert (await deck.get_agent(agent.id)).state is AgentState.KILLED  # the original stays


async def test_one_agent_logs_the_same_events_both_ways(
    local_deck: Deck, remote_deck: Deck
) -> None:
    """The same run, in-process and behind the API: the same events, in the same order,
    saying the same things (ids, times, paths and the session aside). Memory's
    observations are written beside the turn, in no fixed place: counted."""

    async def run(deck: Deck) -> tuple[list[tuple[str, object]], int]:
        agent = await deck.create_agent(
            AgentSpec(prompt="hello", name=unique("twin"), scenario="chat")
        )

        async def logged() -> list[StoredEvent] | None:
            # Up to its first idle: what follows (the kill) is not compared.
            found = await deck.events(agent_id=agent.id)
            idle = [i for i, e in enumerate(found) if e.data.get("new") == AgentState.IDLE]
            return found[: idle[0] + 1] if idle else None

        events = await eventually(logged, timeout=SETTLE_SECONDS, what="the turn logged")
        await deck.kill(agent.id)
        observed = EventType.OBSERVATION_RECORDED
        said = [
            (e.type, e.data.get("text") or e.data.get("new") or "")
            for e in events
            if e.type != observed
        ]
        return said, [e.type for e in events].count(observed)

    local, remote = await asyncio.gather(run(local_deck), run(remote_deck))
    assert local == remote
    assert local[0][-1] == (EventType.STATE_CHANGED, AgentState.IDLE)


async def test_an_unknown_ref_is_not_found(deck: Deck) -> None:
    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("agent", lambda: deck.get_agent("no-such-agent")),
        ("agent", lambda: deck.get_agent("")),
        ("agent", lambda: deck.send("no-such-agent", "hello")),
        ("agent", lambda: deck.interrupt("no-such-agent")),
        ("agent", lambda: deck.kill("no-such-agent")),
        ("agent", lambda: deck.resume("no-such-agent")),
        ("agent", lambda: deck.archive("no-such-agent")),
        ("approval request", lambda: deck.approval("no-such-approval")),
        ("approval request", lambda: deck.approval("")),
        ("approval request", lambda: deck.answer("no-such-approval", "allow")),
        ("question", lambda: deck.ask("no-such-ask")),
        ("question", lambda: deck.ask("")),
        ("question", lambda: deck.answer_ask("no-such-ask", "yes")),
    ]
    for kind, call in cases:
        with pytest.raises(NotFound) as raised:
            await call()
        assert raised.value.kind == kind


async def test_an_unknown_agents_log_and_questions_are_not_found(deck: Deck) -> None:
    for ref in ("no-such-agent", ""):  # an empty ref names no agent: not "all of them"
        with pytest.raises(NotFound):
            await deck.events(agent_id=ref)
        with pytest.raises(NotFound):
            await deck.events_before(agent_id=ref)
        with pytest.raises(NotFound):
            await deck.asks(agent_id=ref)
        with pytest.raises(NotFound):  # was an empty list: no agent and no request alike
            await deck.approvals(agent_id=ref)


# -- the inbox ----------------------------------------------------------------------------


async def test_an_approval_is_asked_and_answered(deck: Deck, tmp_path: Path) -> None:
    profile, scenario = ask_profile_and_scenario(tmp_path)
    agent = await deck.create_agent(
        AgentSpec(prompt="make it", name=unique("asks"), scenario=scenario, profile=profile)
    )

    async def pending() -> list[Approval]:
        return await deck.approvals(states=[ApprovalState.PENDING], agent_id=agent.id)

    (request,) = await eventually(pending, timeout=SETTLE_SECONDS, what="a pending approval")
    assert (request.agent_id, request.tool, request.state) == (
        agent.id,
        "Bash",
        ApprovalState.PENDING,
    )
    assert request.input["command"] == "touch made.txt"
    assert await deck.approval(request.id) == request
    assert request.id in [a.id for a in await deck.approvals(agent_id=agent.id)]
    await settled(deck, agent.id, lambda a: a.state is AgentState.AWAITING_PERMISSION)

    answered = await deck.answer(request.id, "allow", message="go ahead")
    assert (answered.id, answered.state, answered.message) == (
        request.id, ApprovalState.ALLOWED, "go ahead",
    )  # fmt: skip
    assert answered.answered_by and answered.answered_by.startswith("user:cli")
    done = await settled(deck, agent.id, idle_after(1))
    assert (Path(done.cwd) / "made.txt").exists()
    assert await deck.approvals(states=[ApprovalState.PENDING], agent_id=agent.id) == []
    assert (await deck.approval(request.id)).state is ApprovalState.ALLOWED
    with pytest.raises(InvalidState):  # answered once
        await deck.answer(request.id, "deny")


async def test_bad_input_is_a_usage_error(deck: Deck, tmp_path: Path) -> None:
    """What the API refuses as malformed (422) is a UsageError in-process too, checked
    before the ref is looked up (as the API checks the body first), and it changes
    nothing: the request stays pending, the agent is sent nothing."""
    profile, scenario = ask_profile_and_scenario(tmp_path)
    agent = await deck.create_agent(
        AgentSpec(prompt="make it", name=unique("bad"), scenario=scenario, profile=profile)
    )
    try:

        async def pending() -> list[Approval]:
            return await deck.approvals(states=[ApprovalState.PENDING], agent_id=agent.id)

        (asked,) = await eventually(pending, timeout=SETTLE_SECONDS, what="a pending approval")
        for call in (
            lambda: deck.answer(asked.id, "maybe"),
            lambda: deck.answer("no-such-approval", "maybe"),
            lambda: deck.send(agent.id, ""),
            lambda: deck.send("no-such-agent", ""),
            lambda: deck.resume(agent.id, ""),
            lambda: deck.answer_ask("no-such-ask", ""),
        ):
            with pytest.raises(UsageError):
                await call()
        assert await deck.approval(asked.id) == asked
        said = [
            e.data["text"]
            for e in await deck.events(agent_id=agent.id)
            if e.type == EventType.USER_MESSAGE_SENT
        ]
        assert said == ["make it"]
    finally:
        await deck.kill(agent.id)


async def test_a_workers_question_is_answered(deck: Deck, tmp_path: Path) -> None:
    question = {"name": "mcp__deck__ask_orchestrator", "input": {"question": "QUESTION: port?"}}
    scenario = tmp_path / "ask.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "ask",
                "turns": [
                    {"reply": [{"tool_use": question}]},
                    {
                        "when": {"tool_result_contains": "ANSWER-8080"},
                        "reply": [{"text": "GOT-IT"}],
                    },
                    {"reply": [{"text": "NO-ANSWER"}]},
                ],
            }
        )
    )
    agent = await deck.create_agent(
        AgentSpec(prompt="ask", name=unique("asker"), scenario=str(scenario))
    )

    async def asked() -> list[Ask]:
        return await deck.asks(states=[AskState.PENDING], agent_id=agent.id)

    (ask,) = await eventually(asked, timeout=SETTLE_SECONDS, what="the worker's question")
    assert (ask.agent_id, ask.kind, ask.to_agent_id) == (agent.id, AskKind.QUESTION, None)
    assert ask.text.startswith("QUESTION: port?")
    assert await deck.ask(ask.id) == ask
    assert ask.id in [a.id for a in await deck.asks(agent_id=agent.id)]
    assert ask.id in [a.id for a in await deck.asks(agent_id=agent.name)]

    answered = await deck.answer_ask(ask.id, "ANSWER-8080")
    assert (answered.id, answered.state, answered.answer) == (
        ask.id,
        AskState.ANSWERED,
        "ANSWER-8080",
    )
    assert answered.answered_by and answered.answered_by.startswith("user:cli")
    done = await settled(deck, agent.id, idle_after(1))
    assert done.extra["last_result"] == "GOT-IT"
    with pytest.raises(InvalidState):  # answered once
        await deck.answer_ask(ask.id, "ANSWER-again")
    # No states named: every state (the in-process deck gave the pending ones only).
    assert ask.id in [a.id for a in await deck.asks(agent_id=agent.id)]
    assert ask.id not in [
        a.id for a in await deck.asks(states=[AskState.PENDING], agent_id=agent.id)
    ]
    await deck.kill(agent.id)
