"""A chat reply shows the text as it is written: the edits of ``core.partial`` grow
the draft message (throttled as its other edits are), are never sealed or saved in
the bridge's state, and the text's event leaves the reply as it would have been."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.bridges.conversation import ConversationWorker
from agentdeck.core.partial import PartialText
from tests.bridges.memplatform import CHANNEL, MemoryPlatform, agent_event
from tests.bridges.test_worker import bridge_on, text

pytestmark = pytest.mark.anyio


def edit(offset: int, words: str, block: str = "m:0", parent: str | None = None) -> PartialText:
    return PartialText(
        agent_id="ag1", block=block, offset=offset, text=words, parent_tool_use_id=parent
    )


async def test_the_draft_grows_as_the_text_is_written_and_ends_as_its_event(
    tmp_path: Path,
) -> None:
    platform = MemoryPlatform()
    state_file = tmp_path / "b.json"
    bridge = bridge_on(platform, state_file, interval=0)
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_event(text(1, "First."))
        await worker._on_partial(edit(0, "Now I "))
        [draft] = platform.messages.values()
        assert draft.text == "First.\n\nNow I"  # the reply so far, then the words
        await worker._on_partial(edit(6, "write more "))
        assert draft.text == "First.\n\nNow I write more"
        await worker._on_partial(edit(3, "sub ", parent="toolu_1"))  # a subagent's: not here
        await worker._on_partial(edit(40, "gap ", block="m:9"))  # joined midway: not here
        assert draft.text == "First.\n\nNow I write more"
        kept = bridge.state.conversations[CHANNEL.key]  # what the state file holds
        assert "write more" not in kept.draft + "".join(kept.sealed)
        await worker._on_event(text(2, "Now I write more, and end."))
        await worker._on_event(agent_event(3, "state_changed", {"old": "running", "new": "idle"}))
    assert platform.said() == ["First.\n\nNow I write more, and end."]
    assert "write more" not in bridge.state.conversations[CHANNEL.key].draft


async def test_edits_of_the_text_wait_for_the_interval(tmp_path: Path) -> None:
    platform = MemoryPlatform()
    bridge = bridge_on(platform, tmp_path / "b.json", interval=3600)
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_partial(edit(0, "one "))
        await worker._on_partial(edit(4, "two "))
        await worker._on_partial(edit(8, "three "))
        [draft] = platform.messages.values()
        assert draft.text == "one" and draft.edits == 0  # at once, then throttled
        await worker._on_event(text(1, "one two three four."))
        await worker._on_event(agent_event(2, "state_changed", {"old": "running", "new": "idle"}))
    assert platform.said() == ["one two three four."] and draft.edits == 1
