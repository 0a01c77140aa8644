"""``auto_compact_at`` on a spec the same through either deck: kept and shown on
the agent, tokens or a share of the context window; a value out of bounds (or
neither form) refused as a UsageError naming both forms, nothing started."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.errors import UsageError
from tests.contract.helpers import unique

pytestmark = pytest.mark.anyio


async def test_auto_compact_at_is_kept_and_a_bad_one_refused(deck: Deck) -> None:
    name = unique("compacting")
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=name, scenario="chat", auto_compact_at=150_000),
        keep_alive=False,
    )
    assert agent.spec.auto_compact_at == 150_000
    assert (await deck.get_agent(agent.id)).spec.auto_compact_at == 150_000
    for bad in (999, 2_000_001, -1):
        refused = unique("refused")
        with pytest.raises(UsageError):
            await deck.create_agent(
                AgentSpec(prompt="hello", name=refused, scenario="chat", auto_compact_at=bad),
                keep_alive=False,
            )
        assert refused not in [a.name for a in await deck.list_agents(text=refused)]


async def test_a_share_of_the_window_is_kept_and_a_bad_one_refused(deck: Deck) -> None:
    name = unique("sharing")
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=name, scenario="chat", auto_compact_at=0.8),
        keep_alive=False,
    )
    assert agent.spec.auto_compact_at == 0.8
    assert (await deck.get_agent(agent.id)).spec.auto_compact_at == 0.8
    for bad in (0.0, 1.0, 1.5, -0.2, 10_000.5):
        refused = unique("refused")
        with pytest.raises(UsageError) as said:
            await deck.create_agent(
                AgentSpec(prompt="hello", name=refused, scenario="chat", auto_compact_at=bad),
                keep_alive=False,
            )
        assert "between 0 and 1" in str(said.value), str(said.value)
        assert "1,000 and 2,000,000" in str(said.value), str(said.value)
        assert refused not in [a.name for a in await deck.list_agents(text=refused)]
