"""``transition()`` refuses what the table forbids; ``Refusals`` counts what was
refused, by ``old -> new``, and says it in one line to log."""

from __future__ import annotations

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.lifecycle import Refusals, transition


def agent(state: AgentState) -> Agent:
    return Agent(
        id="a1", name="a", state=state, spec=AgentSpec(prompt="hi"), cwd="/w",
        created_at=0.0, updated_at=0.0,
    )  # fmt: skip


def test_a_refused_transition_is_counted_and_said() -> None:
    refusals = Refusals()
    interrupted = agent(AgentState.INTERRUPTED)
    moved = transition(interrupted, AgentState.KILLED, ts=1.0)
    assert moved.refused and moved.agent is interrupted and moved.events == ()
    line = refusals.note(interrupted, AgentState.KILLED)
    refusals.note(interrupted, AgentState.KILLED)
    assert line == "agent a1: refused the illegal transition interrupted -> killed"
    assert refusals.total == 2 and refusals.as_dict() == {"interrupted -> killed": 2}


def test_a_legal_transition_says_so_once() -> None:
    moved = transition(agent(AgentState.RUNNING), AgentState.IDLE, ts=2.0, reason="turn done")
    (event,) = moved.events
    assert moved.agent.state is AgentState.IDLE and not moved.refused
    assert (event.old, event.new, event.reason, event.ts) == ("running", "idle", "turn done", 2.0)
    assert transition(moved.agent, AgentState.IDLE, ts=3.0).events == ()


def test_an_agent_comes_into_being_in_the_state_its_row_says() -> None:
    """A hand-started orchestrator is made ``running``: its log said ``starting``
    while its row said ``running``."""
    from agentdeck.core.events import StateChanged, spawned_events

    for state in (AgentState.STARTING, AgentState.RUNNING):
        (_, born) = spawned_events(agent(state), "made")
        assert isinstance(born, StateChanged) and (born.old, born.new) == (None, state)
