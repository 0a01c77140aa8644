"""The seam between the bridge core and a chat platform.

A platform hands the core what people do (``Incoming`` messages, button
presses) and implements ``Platform`` for what the core shows. Everything the
core needs of a platform is here; nothing else of it leaks into the core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol
from urllib.parse import quote

NAME_ROOM = 120  # characters of a member's name in their tag, encoded
_AS_IS = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")  # printable ASCII


@dataclass(frozen=True)
class Actor:
    """A chat member, as the platform names them."""

    platform: str
    id: str
    name: str
    roles: frozenset[str] = frozenset()

    @property
    def tag(self) -> str:
        """How the audit log names them: ``discord:1234:alice``. It travels in an HTTP
        header, which carries ASCII only: a name beyond it is percent-encoded
        (``Zo%C3%AB``, shown whole in chat by ``text``), and cut whole characters
        at a time to ``NAME_ROOM``, within the 200 the daemon takes."""
        name = "".join(c for c in self.name if c.isprintable() and c not in ":\r\n")[:64]
        encoded = ""
        for c in name:
            part = quote(c, safe=_AS_IS)
            if len(encoded) + len(part) > NAME_ROOM:
                break
            encoded += part
        return f"{self.platform}:{self.id}:{encoded or self.id}"


@dataclass(frozen=True)
class Conversation:
    """A channel, or a thread in one. Allow-lists name the channel."""

    channel: str
    thread: str | None = None

    @property
    def key(self) -> str:
        return f"{self.channel}/{self.thread}" if self.thread else self.channel

    @classmethod
    def from_key(cls, key: str) -> Conversation:
        channel, _, thread = key.partition("/")
        return cls(channel, thread or None)


@dataclass(frozen=True)
class Upload:
    """A file a member attached to a message."""

    filename: str
    data: bytes


@dataclass(frozen=True)
class Incoming:
    conversation: Conversation
    author: Actor
    text: str
    message_id: str = ""
    from_bot: bool = False
    uploads: tuple[Upload, ...] = field(default_factory=tuple)


class PromptKind(StrEnum):
    APPROVAL = "approval"  # Allow once / Always / Deny (with a reason)
    ASK = "ask"  # a reply box


@dataclass(frozen=True)
class Prompt:
    kind: PromptKind
    request_id: str
    text: str


class Platform(Protocol):
    """What the core asks of a chat platform. Message ids are the platform's own."""

    name: str
    message_limit: int  # characters in one message

    async def send(self, conversation: Conversation, text: str) -> str: ...

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None: ...

    async def attach(
        self, conversation: Conversation, filename: str, data: bytes, text: str
    ) -> str: ...

    async def react(self, conversation: Conversation, message_id: str, emoji: str) -> None: ...

    async def set_busy(self, conversation: Conversation, busy: bool) -> None:
        """The agent works (typing indicator) or waits."""
        ...

    async def prompt(self, conversation: Conversation, prompt: Prompt) -> str:
        """A message people can act on (buttons, a reply box)."""
        ...

    async def close_prompt(self, conversation: Conversation, message_id: str, text: str) -> None:
        """The prompt answered (or expired): its new text, and no more actions."""
        ...
