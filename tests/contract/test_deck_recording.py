"""A recorded agent the same through either deck: ``record`` on its spec is kept
and shown, and the agent runs through the recording proxy to its end."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.deck import Deck
from tests.contract.helpers import settled, unique

pytestmark = pytest.mark.anyio


async def test_a_recorded_agent_keeps_record_on_its_spec_and_runs(deck: Deck) -> None:
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("taped"), scenario="chat", record=True),
        keep_alive=False,
    )
    assert agent.spec.record is True
    done = await settled(deck, agent.id, lambda a: a.state.is_final)
    assert done.state is AgentState.DONE, done.last_error
    assert (await deck.get_agent(agent.id)).spec.record is True
    plain = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("plain"), scenario="chat"), keep_alive=False
    )
    assert plain.spec.record is False
