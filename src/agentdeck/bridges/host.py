"""What a conversation's worker needs of its bridge, and the bridge's settings.

``core.Bridge`` is the one host; it builds a ``conversation.ConversationWorker``
for each conversation, and the worker reaches back through ``BridgeHost``, so
neither module imports the other in a circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentdeck.bridges.delivery import Retry
from agentdeck.core.deck import Deck

if TYPE_CHECKING:
    from agentdeck.bridges.platform import Actor, Platform
    from agentdeck.bridges.state import BridgeState, ConversationState


@dataclass(frozen=True)
class BridgeConfig:
    channels: frozenset[str]  # channels served (threads in them too); empty: none
    approvers: frozenset[str] = frozenset()  # member ids, or "role:<name>"; empty: nobody
    admins: frozenset[str] = frozenset()  # who may /project; empty: nobody
    project_roots: tuple[str, ...] = ()  # where /project may point
    on_busy: Literal["queue", "interrupt"] = "queue"
    edit_interval: float = 1.0
    attach_over: int = 1500  # characters of tool output shown as an attachment, not at all
    agent: Mapping[str, Any] = field(default_factory=dict)  # AgentSpec fields: new agents' defaults
    template: str | None = None  # the agent template new agents start from
    retry: Retry = field(default_factory=Retry)  # waits between two tries of one post


class ActingDeck(Deck, Protocol):
    """The daemon's deck as a bridge holds it (``daemon.connect``: a ``RemoteDeck``):
    the Deck interface, and the same deck acting for a chat member, so that the
    daemon's audit log and ``answered_by`` name them. Who acts is never an argument
    of the interface itself."""

    def acting_for(self, tag: str) -> Deck:
        """This deck, every call on it for the member ``tag`` (``Actor.tag``)."""
        ...


class BridgeHost(Protocol):
    platform: Platform
    config: BridgeConfig
    state: BridgeState
    _roots: dict[str, str | None]  # agent -> conversation key (or None)

    @property
    def deck(self) -> Deck:
        """The daemon's deck, as the bridge itself (reading, following events)."""
        ...

    def deck_for(self, actor: Actor | str) -> Deck:
        """The daemon's deck acting for a member (``Actor``, or its ``tag``)."""
        ...

    def save(self) -> None: ...

    def record(self, actor: Actor, action: str, **detail: Any) -> None: ...

    def conversation(self, key: str) -> ConversationState: ...

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]: ...
