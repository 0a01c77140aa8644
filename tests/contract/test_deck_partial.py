"""``Deck.follow_partial`` both ways: the text being written comes as
``PartialText`` edits before the turn completes, builds the final text, and the
log holds no trace of it; ``follow`` alone never yields one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest
import yaml

from agentdeck.core.agent import AgentSpec
from agentdeck.core.deck import Deck
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from tests.contract.helpers import SETTLE_SECONDS, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TEXT = "Written as you watch: " + " ".join(f"piece{i}" for i in range(80)) + " end."


async def test_the_text_being_written_is_followed_before_the_turn_ends(
    deck: Deck, tmp_path: Path
) -> None:
    scenario = tmp_path / "partial.yaml"
    turn = {"chunk_delay": 0.01, "reply": [{"text": TEXT}]}
    scenario.write_text(yaml.safe_dump({"name": "partial", "turns": [turn]}))
    after = await deck.last_event_id()
    feed = cast(
        AsyncGenerator[list[StoredEvent | PartialText]],
        deck.follow_partial(after=after, heartbeat=1.0),
    )
    seen: list[StoredEvent | PartialText] = []
    async with contextlib.aclosing(feed), asyncio.timeout(SETTLE_SECONDS):
        await anext(feed)  # subscribed: a remote feed's first, an in-process heartbeat
        agent = await deck.create_agent(
            AgentSpec(prompt="say it", name=unique("partial"), scenario=str(scenario))
        )
        async for batch in feed:
            seen += [e for e in batch if e.agent_id == agent.id]
            if any(isinstance(e, StoredEvent) and e.type == "turn_completed" for e in seen):
                break
    edits = [e for e in seen if isinstance(e, PartialText)]
    kinds = [e.type for e in seen]
    assert len(edits) >= 2 and kinds.index("partial") < kinds.index("assistant_text")
    shown = ""
    for edit in edits:
        shown = edit.applied(shown)
    [final] = [e for e in seen if isinstance(e, StoredEvent) and e.type == "assistant_text"]
    assert final.data["text"] == TEXT and TEXT.startswith(shown) and len(shown) > len(TEXT) // 2
    logged = await deck.events(agent_id=agent.id)
    assert "partial" not in [e.type for e in logged]
    followed = [e.id for e in seen if isinstance(e, StoredEvent)]
    assert [e.id for e in logged if after < e.id <= followed[-1]] == followed
