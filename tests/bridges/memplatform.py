"""An in-memory chat platform for the bridge core, and a running bridge on a
real daemon. It checks what a real platform would refuse: an empty message, one
over the limit, an edit of a message that does not exist."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.bridges.core import Bridge, BridgeConfig
from agentdeck.bridges.daemon import connect
from agentdeck.bridges.platform import Actor, Conversation, Incoming, Prompt
from agentdeck.core.events import StoredEvent
from tests.support.served import Served
from tests.support.waiting import eventually

ALICE = Actor("memory", "1", "alice", frozenset({"deckhands"}))
MALLORY = Actor("memory", "2", "mallory")
CHANNEL = Conversation("general")


@dataclass
class Message:
    id: str
    conversation: str
    text: str
    kind: str = "text"  # text, attachment, prompt
    prompt: Prompt | None = None
    closed: bool = False
    data: bytes = b""
    edits: int = 0
    reactions: list[str] = field(default_factory=list)


class MemoryPlatform:
    name = "memory"

    def __init__(self, limit: int = 2000) -> None:
        self.message_limit = limit
        self.messages: dict[str, Message] = {}
        self.busy: list[tuple[str, bool]] = []
        self.incoming: dict[str, Message] = {}  # members' messages, for reactions
        self._ids = itertools.count(1)

    def _check(self, text: str) -> None:
        assert text.strip(), "a platform refuses an empty message"
        assert len(text) <= self.message_limit, f"{len(text)} > {self.message_limit}"

    def _new(self, conversation: Conversation, text: str, **kw: Any) -> str:
        message = Message(str(next(self._ids)), conversation.key, text, **kw)
        self.messages[message.id] = message
        return message.id

    async def send(self, conversation: Conversation, text: str) -> str:
        self._check(text)
        return self._new(conversation, text)

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None:
        self._check(text)
        message = self.messages[message_id]
        assert message.conversation == conversation.key
        message.text = text
        message.edits += 1

    async def attach(
        self, conversation: Conversation, filename: str, data: bytes, text: str
    ) -> str:
        return self._new(conversation, filename, kind="attachment", data=data)

    async def react(self, conversation: Conversation, message_id: str, emoji: str) -> None:
        self.incoming[message_id].reactions.append(emoji)

    async def set_busy(self, conversation: Conversation, busy: bool) -> None:
        self.busy.append((conversation.key, busy))

    async def prompt(self, conversation: Conversation, prompt: Prompt) -> str:
        self._check(prompt.text)
        return self._new(conversation, prompt.text, kind="prompt", prompt=prompt)

    async def close_prompt(self, conversation: Conversation, message_id: str, text: str) -> None:
        self._check(text)
        message = self.messages[message_id]
        message.text, message.closed = text, True

    # -- the members' side ---------------------------------------------------------------

    def said(self, conversation: Conversation = CHANNEL, *, kind: str = "text") -> list[str]:
        return [
            m.text
            for m in self.messages.values()
            if m.conversation == conversation.key and m.kind == kind
        ]

    def prompts(self) -> list[Message]:
        return [m for m in self.messages.values() if m.kind == "prompt"]


def agent_event(i: int, type: str, data: dict[str, Any]) -> StoredEvent:
    """The conversation's agent's event ``i``, as the daemon's feed gives it."""
    return StoredEvent(id=i, agent_id="ag1", type=type, ts=float(i), data=data)


_incoming_ids = itertools.count(1)


def message(
    platform: MemoryPlatform,
    text: str,
    *,
    conversation: Conversation = CHANNEL,
    author: Actor = ALICE,
    from_bot: bool = False,
) -> Incoming:
    """A member's message, as the platform would hand it to the bridge."""
    mid = f"in{next(_incoming_ids)}"
    platform.incoming[mid] = Message(mid, conversation.key, text)
    return Incoming(conversation, author, text, message_id=mid, from_bot=from_bot)


@contextlib.asynccontextmanager
async def bridged(
    served: Served, platform: MemoryPlatform, state: Path, **config: Any
) -> AsyncIterator[Bridge]:
    """A bridge serving ``platform`` on the daemon until the block ends (then it
    stops as a killed process would: mid-whatever it was doing)."""
    config.setdefault("channels", frozenset({CHANNEL.channel}))
    config.setdefault("approvers", frozenset({"role:deckhands"}))
    config.setdefault("edit_interval", 0.0)
    deck = connect(served.info.url, served.token)
    bridge = Bridge(platform, deck, state, BridgeConfig(**config))
    task = asyncio.create_task(bridge.run())
    try:
        async with asyncio.timeout(30):
            ready = asyncio.create_task(bridge.ready.wait())
            await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                task.result()
            # The prompt stream is open once it has its position.
            await eventually(_async(lambda: bridge.state.position is not None), what="the bridge")
        yield bridge
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await deck.aclose()


def _async(probe: Any) -> Any:
    async def run() -> Any:
        return probe()

    return run


async def agent_of(served: Served, bridge: Bridge, conversation: Conversation = CHANNEL) -> Any:
    async def probe() -> dict[str, Any] | None:
        conv = bridge.state.conversations.get(conversation.key)
        if conv is None or conv.agent_id is None:
            return None
        async with served.api() as api:
            found: dict[str, Any] = (await api.get(f"/api/agents/{conv.agent_id}")).json()
            return found

    return await eventually(probe, timeout=60, what="the conversation's agent")


async def settled(served: Served, agent_id: str, turns: int, *, timeout: float = 120) -> Any:
    """The agent, once it has finished ``turns`` turns and is not busy."""

    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
        idle = found["state"] in ("idle", "done", "error", "interrupted", "killed")
        return found if idle and found["turns"] >= turns else None

    return await eventually(probe, timeout=timeout, what=f"{agent_id} to finish turn {turns}")
