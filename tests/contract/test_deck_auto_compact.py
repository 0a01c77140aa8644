"""``auto_compact_at`` on a spec the same through either deck: kept and shown on
the agent; a value out of bounds (or not a whole number) refused as a UsageError,
nothing started."""

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
