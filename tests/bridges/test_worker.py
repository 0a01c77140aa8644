"""A conversation's reply as the agent's events arrive, without a daemon: the
draft edited in place, throttled edits, text sealed into chunks as it outgrows a
message, and a restart in the middle of delivering them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.bridges.conversation import ConversationWorker
from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon import connect
from agentdeck.bridges.platform import Conversation
from agentdeck.bridges.state import ConversationState
from agentdeck.bridges.text import open_fence
from agentdeck.core.events import StoredEvent
from tests.bridges.memplatform import CHANNEL, MemoryPlatform, agent_event

pytestmark = pytest.mark.anyio


def bridge_on(platform: MemoryPlatform, state: Path, interval: float) -> Bridge:
    # Nothing here reaches the daemon: the worker is fed events directly.
    deck = connect("http://127.0.0.1:9", "unused")
    config = BridgeConfig(channels=frozenset({CHANNEL.channel}), edit_interval=interval)
    bridge = Bridge(platform, deck, state, config)
    bridge.state.conversations[CHANNEL.key] = ConversationState(agent_id="ag1", busy=True)
    return bridge


def text(i: int, words: str) -> StoredEvent:
    return agent_event(i, "assistant_text", {"text": words})


async def test_the_reply_grows_in_one_message_and_edits_are_throttled(tmp_path: Path) -> None:
    platform = MemoryPlatform()
    bridge = bridge_on(platform, tmp_path / "b.json", interval=3600)
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_event(text(1, "One."))
        await worker._on_event(
            agent_event(2, "tool_called", {"tool": "Bash", "input": {"command": "ls"}})
        )
        await worker._on_event(text(3, "Two."))
        # The first event shows at once; the rest wait for the interval.
        [draft] = platform.messages.values()
        assert draft.text == "One." and draft.edits == 0
        # The turn's end shows everything, in the same message.
        await worker._on_event(agent_event(4, "state_changed", {"old": "running", "new": "idle"}))
    assert [m.text for m in platform.messages.values()] == ["One.\n\n▸ Bash: ls\n\nTwo."]
    assert draft.edits == 1
    state = bridge.state.conversations[CHANNEL.key]
    assert state.cursor == 4 and not state.busy and state.draft == "" and state.draft_id is None


async def test_text_outgrowing_a_message_is_sealed_into_whole_code_blocks(tmp_path: Path) -> None:
    platform = MemoryPlatform(limit=120)
    bridge = bridge_on(platform, tmp_path / "b.json", interval=0)
    code = "\n".join(f"value_{i} = {i}" for i in range(30))
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_event(text(1, f"Code:\n```python\n{code}\n```"))
        # Sealed while the turn still runs: every message but the last is final.
        assert len(platform.messages) > 3
        await worker._on_event(text(2, "That is all."))
        await worker._on_event(agent_event(3, "state_changed", {"old": "running", "new": "idle"}))
    said = platform.said()
    assert all(len(m) <= 120 and open_fence(m) is None for m in said)
    lines = [line for m in said for line in m.splitlines() if line.startswith("value_")]
    assert lines == code.splitlines()
    assert said[-1].endswith("That is all.")


async def test_a_restart_delivers_what_was_sealed_once_and_in_order(tmp_path: Path) -> None:
    platform = MemoryPlatform()
    state = tmp_path / "b.json"
    bridge = bridge_on(platform, state, interval=0)
    async with asyncio.TaskGroup() as tg:
        bridge._tg = tg
        worker = ConversationWorker(bridge, CHANNEL)
        await worker._on_event(text(1, "Draft so far."))
    draft_id = bridge.state.conversations[CHANNEL.key].draft_id
    # As if the bridge died after sealing the reply but before delivering it.
    conv = bridge.state.conversations[CHANNEL.key]
    conv.sealed = ["Draft so far. And the end.", "A second chunk."]
    conv.draft = ""
    bridge.save()

    again = Bridge(
        platform,
        connect("http://127.0.0.1:9", "unused"),
        state,
        BridgeConfig(channels=frozenset({CHANNEL.channel}), edit_interval=0),
    )
    async with asyncio.TaskGroup() as tg:
        again._tg = tg
        worker = ConversationWorker(again, Conversation(CHANNEL.channel))
        await worker._show(final=False)
    assert platform.said() == ["Draft so far. And the end.", "A second chunk."]
    assert platform.messages[str(draft_id)].text == "Draft so far. And the end."
    assert again.state.conversations[CHANNEL.key].sealed == []
    # An event already delivered is not applied twice.
    async with asyncio.TaskGroup() as tg:
        again._tg = tg
        await ConversationWorker(again, CHANNEL)._on_event(text(1, "Draft so far."))
    assert platform.said() == ["Draft so far. And the end.", "A second chunk."]
