"""``compact`` judges a live agent by its session, as ``get_agent`` does: the
session sets its state before the store has written it, so a caller that saw the
agent idle is never told it is running (seen in CI: "is running; cannot compact")."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.compaction import BOUNDARY
from agentdeck.daemon import compose
from agentdeck.settings import Settings
from tests.contract.helpers import idle_after, settled
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


async def test_compact_trusts_the_live_session_over_a_row_that_lags(settings: Settings) -> None:
    deck = await compose.open_deck(settings)
    try:
        agent = await deck.create_agent(AgentSpec(prompt="hello", name="lag", scenario="chat"))
        await settled(deck, agent.id, idle_after(1))
        mark = await deck.last_event_id()
        # The row as it is while the session's write of the turn's end is under way.
        row = await deck._store.find_agent(agent.id)
        await deck._store.record([], row.with_changes(state=AgentState.RUNNING))
        assert (await deck.get_agent(agent.id)).state is AgentState.IDLE

        await deck.compact(agent.id, "keep the greeting")

        async def boundary() -> bool:
            events = await deck.events(after=mark, agent_id=agent.id)
            return any(e.type == "notice" and e.data.get("kind") == BOUNDARY for e in events)

        await eventually(boundary, timeout=60, what="the compaction in the log")
    finally:
        await deck.close()
