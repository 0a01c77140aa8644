"""What the contract tests share: unique names, waiting for an agent to settle,
following its events through either deck."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import cast

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from tests.support.waiting import eventually

SETTLE_SECONDS = 60.0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def settled(deck: Deck, agent_id: str, where: Callable[[Agent], bool]) -> Agent:
    async def probe() -> Agent | None:
        agent = await deck.get_agent(agent_id)
        return agent if where(agent) else None

    return await eventually(probe, timeout=SETTLE_SECONDS, what=f"agent {agent_id} to settle")


def idle_after(turns: int) -> Callable[[Agent], bool]:
    return lambda a: a.state is AgentState.IDLE and a.turns >= turns


async def followed(
    deck: Deck, agent_id: str, *, until: Callable[[list[StoredEvent]], bool]
) -> list[StoredEvent]:
    """The agent's events through the live feed, from the start of the log."""
    seen: list[StoredEvent] = []
    feed = cast(AsyncGenerator[list[StoredEvent]], deck.follow(after=0, agent_id=agent_id))
    async with contextlib.aclosing(feed), asyncio.timeout(SETTLE_SECONDS):
        async for batch in feed:
            seen += batch
            if until(seen):
                return seen
    raise AssertionError(f"the feed ended before it had what was awaited: {seen}")
