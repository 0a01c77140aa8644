"""One policy replay at a time per deck: each re-decides a whole history on the
daemon's loop, so a second caller (any operator, or a script in a loop) is refused
with a clear 409 while one runs, and may go again once it has answered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentdeck.daemon import compose
from agentdeck.errors import NotFound, Refused
from agentdeck.governance import replay as replay_module
from agentdeck.settings import Settings

pytestmark = pytest.mark.anyio


async def test_a_second_replay_is_refused_while_one_runs(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = replay_module.replay
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        await release.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(replay_module, "replay", held)
    deck = await compose.open_deck(settings)
    try:
        first = asyncio.create_task(deck.policy_replay("strict"))
        await asyncio.wait_for(entered.wait(), 60)
        with pytest.raises(Refused, match="already running") as refused:
            await deck.policy_replay("strict")
        assert refused.value.http_status == 409
        release.set()
        assert (await asyncio.wait_for(first, 60)).profile == "strict"
        # Ended (answered or failed), the deck takes the next one.
        assert (await deck.policy_replay("strict")).calls == 0
        with pytest.raises(NotFound):  # raised inside the replay: its slot is freed
            await deck.policy_replay("strict", agent="no-such-agent")
        assert (await deck.policy_replay("strict")).calls == 0
    finally:
        release.set()
        await deck.close()
