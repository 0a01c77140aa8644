"""Stand-ins for what discord.py hands the bridge (messages, interactions) and
for the channels it posts to: only the attributes and calls the bridge uses,
recorded for assertions. discord.py's own types are used where they are plain
data (views, buttons, modals, enums)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import discord

_ids = itertools.count(10_000)


def silent(mentions: discord.AllowedMentions | None) -> bool:
    """Pings nobody: no @everyone, no roles, no users, no reply ping."""
    return mentions is not None and mentions.to_dict() == discord.AllowedMentions.none().to_dict()


@dataclass
class FakeRole:
    id: int
    name: str


@dataclass
class FakeMember:
    id: int
    display_name: str
    roles: list[FakeRole] = field(default_factory=list)
    bot: bool = False


@dataclass
class FakeGuild:
    id: int


@dataclass
class Sent:
    id: int
    content: str | None
    view: discord.ui.View | None = None
    file: discord.File | None = None
    mentions: discord.AllowedMentions | None = None
    reactions: list[str] = field(default_factory=list)
    edits: int = 0
    by_member: bool = False  # a member's message, not the bot's
    is_prompt: bool = False  # posted with buttons

    def custom_ids(self) -> list[str]:
        if self.view is None:
            return []
        return [str(getattr(item, "custom_id", "")) for item in self.view.children]


class FakePartial:
    def __init__(self, sent: Sent) -> None:
        self.sent = sent

    async def edit(self, **kw: Any) -> None:
        assert silent(kw.get("allowed_mentions"))
        content = kw.get("content")
        assert content and len(content) <= 2000
        self.sent.content = content
        if "view" in kw:
            self.sent.view = kw["view"]
        self.sent.edits += 1

    async def add_reaction(self, emoji: str) -> None:
        self.sent.reactions.append(emoji)


class FakeChannel:
    """A text channel (or, with ``parent_id``, a thread in one)."""

    def __init__(self, id: int, guild: FakeGuild, parent_id: int | None = None) -> None:
        self.id = id
        self.guild = guild
        self.parent_id = parent_id
        self.type = discord.ChannelType.public_thread if parent_id else discord.ChannelType.text
        self.sent: dict[int, Sent] = {}
        self.typed = 0
        self.threads: list[FakeChannel] = []

    async def send(self, content: str | None = None, **kw: Any) -> Sent:
        assert silent(kw.get("allowed_mentions")), "agents' text must never ping anyone"
        assert content is None or 0 < len(content) <= 2000
        sent = Sent(next(_ids), content, kw.get("view"), kw.get("file"), kw["allowed_mentions"])
        sent.is_prompt = sent.view is not None
        self.sent[sent.id] = sent
        return sent

    def get_partial_message(self, message_id: int) -> FakePartial:
        return FakePartial(self.sent[message_id])

    async def typing(self) -> None:
        self.typed += 1

    async def create_thread(self, *, name: str, type: discord.ChannelType) -> FakeChannel:
        assert type is discord.ChannelType.public_thread and 0 < len(name) <= 100
        thread = FakeChannel(next(_ids), self.guild, parent_id=self.id)
        self.threads.append(thread)
        return thread

    def post(self, author: FakeMember, content: str, *files: FakeAttachment) -> FakeMessage:
        """A member's (or another bot's) message in this channel."""
        message = FakeMessage(content, author, self, attachments=list(files))
        self.sent[message.id] = Sent(message.id, content, by_member=True)
        return message

    def texts(self) -> list[str]:
        """What the bridge posted here, prompts and files aside."""
        return [
            s.content
            for s in self.sent.values()
            if s.content and not s.is_prompt and s.file is None and not s.by_member
        ]

    def prompts(self) -> list[Sent]:
        return [s for s in self.sent.values() if s.is_prompt]


@dataclass
class FakeAttachment:
    filename: str
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    async def read(self) -> bytes:
        return self.data


@dataclass
class FakeMessage:
    content: str
    author: FakeMember
    channel: FakeChannel
    id: int = field(default_factory=lambda: next(_ids))
    webhook_id: int | None = None
    attachments: list[FakeAttachment] = field(default_factory=list)

    @property
    def guild(self) -> FakeGuild:
        return self.channel.guild


class FakeResponse:
    def __init__(self) -> None:
        self.messages: list[tuple[str, bool]] = []
        self.modals: list[discord.ui.Modal] = []
        self.deferred = False

    async def send_message(self, text: str, *, ephemeral: bool = False, **kw: Any) -> None:
        assert not self.is_done(), "an interaction has one first response"
        self.messages.append((text, ephemeral))

    async def send_modal(self, modal: discord.ui.Modal) -> None:
        assert not self.is_done(), "an interaction has one first response"
        self.modals.append(modal)

    async def defer(self, *, ephemeral: bool = False, thinking: bool = False) -> None:
        assert not self.is_done(), "an interaction has one first response"
        self.deferred = True

    def is_done(self) -> bool:
        return self.deferred or bool(self.messages) or bool(self.modals)


class FakeFollowup:
    def __init__(self) -> None:
        self.messages: list[tuple[str, bool]] = []

    async def send(self, text: str, *, ephemeral: bool = False, **kw: Any) -> None:
        self.messages.append((text, ephemeral))


@dataclass
class FakeInteraction:
    user: FakeMember
    channel: FakeChannel
    type: discord.InteractionType = discord.InteractionType.application_command
    data: dict[str, Any] = field(default_factory=dict)
    response: FakeResponse = field(default_factory=FakeResponse)
    followup: FakeFollowup = field(default_factory=FakeFollowup)

    @property
    def guild_id(self) -> int:
        return self.channel.guild.id

    def said(self) -> str:
        return "\n".join(t for t, _ in [*self.response.messages, *self.followup.messages])

    def told_privately(self) -> list[str]:
        """What the member alone was told (ephemeral), first response or after."""
        return [t for t, private in [*self.response.messages, *self.followup.messages] if private]


def press(user: FakeMember, channel: FakeChannel, custom_id: str) -> FakeInteraction:
    return FakeInteraction(
        user, channel, discord.InteractionType.component, {"custom_id": custom_id}
    )


def submit(
    user: FakeMember, channel: FakeChannel, modal: discord.ui.Modal, value: str
) -> FakeInteraction:
    """A modal sent back with ``value`` typed into its one input (as the gateway nests it)."""
    [item] = modal.children
    field_id = str(getattr(item, "custom_id", ""))
    data = {
        "custom_id": modal.custom_id,
        "components": [
            {"type": 1, "components": [{"type": 4, "custom_id": field_id, "value": value}]}
        ],
    }
    return FakeInteraction(user, channel, discord.InteractionType.modal_submit, data)
