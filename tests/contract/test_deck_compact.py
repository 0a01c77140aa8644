"""``Deck.compact`` the same through either deck: an idle agent is sent Claude
Code's ``/compact`` (with the instructions given) and its log gets the compaction,
with the tokens before and after; an unknown agent is NotFound, one that is not
idle InvalidState, instructions that are not one bounded line of text UsageError,
nothing sent."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.compaction import BOUNDARY, compaction
from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from agentdeck.errors import InvalidState, NotFound, UsageError
from tests.contract.helpers import idle_after, settled, unique
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


async def _sent(deck: Deck, agent_id: str, after: int) -> list[str]:
    events = await deck.events(after=after, agent_id=agent_id)
    return [e.data["text"] for e in events if e.type == "user_message_sent"]


async def test_an_idle_agent_compacts_and_its_log_says_so(deck: Deck) -> None:
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("compact"), scenario="chat")
    )
    await settled(deck, agent.id, idle_after(1))
    mark = await deck.last_event_id()
    back = await deck.compact(agent.id, "keep the greeting")
    assert back.id == agent.id

    async def boundary() -> StoredEvent | None:
        events = await deck.events(after=mark, agent_id=agent.id)
        found = [e for e in events if e.type == "notice" and e.data.get("kind") == BOUNDARY]
        return found[0] if found else None

    notice = await eventually(boundary, timeout=60, what="the compaction in the log")
    said = compaction(notice.data)
    assert said["trigger"] == "manual", said
    assert said["pre_tokens"] > said["post_tokens"] > 0, said
    assert await _sent(deck, agent.id, mark) == ["/compact keep the greeting"]
    found = await settled(deck, agent.id, lambda a: a.state is AgentState.IDLE)
    assert found.turns >= 1
    await deck.kill(agent.id)


async def test_compact_refuses_what_it_cannot_do_and_sends_nothing(deck: Deck) -> None:
    with pytest.raises(NotFound):
        await deck.compact(unique("nobody"))
    agent = await deck.create_agent(
        AgentSpec(prompt="hello", name=unique("compact"), scenario="chat")
    )
    await settled(deck, agent.id, idle_after(1))
    mark = await deck.last_event_id()
    # Hostile instructions: an escape sequence, a second line; too long.
    for bad in ("esc \x1b[2J", "one\n/clear", "x" * 2001):
        with pytest.raises(UsageError):
            await deck.compact(agent.id, bad)
    await deck.kill(agent.id)
    await settled(deck, agent.id, lambda a: a.state.is_final)
    with pytest.raises(InvalidState):
        await deck.compact(agent.id)
    assert await _sent(deck, agent.id, mark) == []
