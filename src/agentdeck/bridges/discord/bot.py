"""What discord.py hands the bridge, handed on to the core.

``Frontend`` is the seam: its methods take discord.py's objects (a message, an
interaction) and never block the gateway loop (the core queues the work).
Only allow-listed guilds and channels (threads in them included) are served;
messages from bots are ignored; the core decides who may answer a prompt.
``DeckBot`` is the discord.py client that wires the frontend to the gateway
and registers the slash commands.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import discord
from discord import app_commands

from agentdeck.bridges import commands
from agentdeck.bridges.core import Bridge
from agentdeck.bridges.discord.platform import custom_id, parse_custom_id
from agentdeck.bridges.platform import Actor, Conversation, Incoming, Upload

logger = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 25 * 1024 * 1024  # what the daemon takes for one file
INPUT_LIMIT = 1000  # characters of a reason or an answer typed in a modal
THREAD_NAME_LIMIT = 90


def actor_of(user: Any) -> Actor:
    """A Discord member as the core knows them: id, display name, roles (by name and id)."""
    roles = getattr(user, "roles", None) or []
    names = {r.name for r in roles} | {str(r.id) for r in roles}
    return Actor(
        "discord", str(user.id), str(getattr(user, "display_name", user.id)), frozenset(names)
    )


def conversation_of(channel: Any) -> Conversation | None:
    """A channel, or a thread (named with its parent channel for the allow-list)."""
    if channel is None:
        return None
    parent = getattr(channel, "parent_id", None)
    if isinstance(channel, discord.Thread) or (parent is not None and _is_thread(channel)):
        return Conversation(str(parent), str(channel.id))
    return Conversation(str(channel.id))


def _is_thread(channel: Any) -> bool:
    kind = getattr(channel, "type", None)
    return kind in (
        discord.ChannelType.public_thread,
        discord.ChannelType.private_thread,
        discord.ChannelType.news_thread,
    )


class ReasonModal(discord.ui.Modal):
    """Deny, with an optional reason for the agent."""

    def __init__(self, request_id: str) -> None:
        super().__init__(title="Deny the request", custom_id=custom_id("deny-why", request_id))
        self.add_item(
            discord.ui.TextInput(
                label="Reason (told to the agent)",
                style=discord.TextStyle.paragraph,
                required=False,
                max_length=INPUT_LIMIT,
                custom_id="reason",
            )
        )


class AnswerModal(discord.ui.Modal):
    def __init__(self, ask_id: str) -> None:
        super().__init__(title="Answer the agent", custom_id=custom_id("answer", ask_id))
        self.add_item(
            discord.ui.TextInput(
                label="Your answer",
                style=discord.TextStyle.paragraph,
                max_length=INPUT_LIMIT,
                custom_id="answer",
            )
        )


def _values(data: Any) -> Iterator[str]:
    """Every value typed into a modal's inputs (however deeply discord nests them)."""
    if isinstance(data, dict):
        if isinstance(data.get("value"), str):
            yield data["value"]
        for value in data.values():
            yield from _values(value)
    elif isinstance(data, list):
        for item in data:
            yield from _values(item)


class Frontend:
    def __init__(self, bridge: Bridge, guilds: frozenset[int]) -> None:
        self.bridge = bridge
        self.guilds = guilds

    def serves(self, guild_id: int | None, conversation: Conversation | None) -> bool:
        return (
            guild_id is not None
            and guild_id in self.guilds
            and conversation is not None
            and self.bridge.allowed(conversation)
        )

    # -- messages ------------------------------------------------------------------------

    async def on_message(self, message: Any) -> None:
        if message.author.bot or message.webhook_id is not None:
            return
        conversation = conversation_of(message.channel)
        guild = message.guild.id if message.guild is not None else None
        if not self.serves(guild, conversation):
            return
        assert conversation is not None
        uploads = []
        for attachment in message.attachments:
            if attachment.size > MAX_UPLOAD_BYTES:
                logger.info(
                    "attachment %s too large (%d bytes)", attachment.filename, attachment.size
                )
                continue
            uploads.append(Upload(attachment.filename, await attachment.read()))
        await self.bridge.handle(
            Incoming(
                conversation,
                actor_of(message.author),
                message.content,
                message_id=str(message.id),
                uploads=tuple(uploads),
            )
        )

    # -- buttons and modals --------------------------------------------------------------

    async def on_interaction(self, interaction: Any) -> None:
        if interaction.type not in (
            discord.InteractionType.component,
            discord.InteractionType.modal_submit,
        ):
            return  # slash commands go through the command tree
        parsed = parse_custom_id(str((interaction.data or {}).get("custom_id", "")))
        if parsed is None:
            return
        action, request_id = parsed
        if not self.serves(interaction.guild_id, conversation_of(interaction.channel)):
            await self._tell(interaction, "This channel is not served.")
            return
        actor = actor_of(interaction.user)
        if action in ("allow", "always", "deny-why", "answer"):
            # The daemon answers within Discord's 3 s for a first response, mostly:
            # acknowledge first, say the outcome after.
            await interaction.response.defer(ephemeral=True, thinking=True)
        if action in ("allow", "always"):
            said = await self.bridge.decide(actor, request_id, "allow", always=action == "always")
        elif action == "deny":
            if not self.bridge.may_decide(actor):
                said = await self.bridge.decide(actor, request_id, "deny")
            else:
                await interaction.response.send_modal(ReasonModal(request_id))
                return
        elif action == "deny-why":
            reason = next(_values(interaction.data.get("components")), "").strip() or None
            said = await self.bridge.decide(actor, request_id, "deny", reason=reason)
        elif action == "reply":
            if not self.bridge.may_decide(actor):
                said = await self.bridge.reply(actor, request_id, "")
            else:
                await interaction.response.send_modal(AnswerModal(request_id))
                return
        elif action == "answer":
            answer = next(_values(interaction.data.get("components")), "")
            said = await self.bridge.reply(actor, request_id, answer)
        else:
            said = "Unknown action."
        await self._tell(interaction, said)

    async def _tell(self, interaction: Any, text: str) -> None:
        """An answer only the member who acted sees."""
        if interaction.response.is_done():
            await interaction.followup.send(
                text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
            )
            return
        await interaction.response.send_message(
            text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
        )

    # -- slash commands ------------------------------------------------------------------

    def _where(self, interaction: Any) -> Conversation | None:
        conversation = conversation_of(interaction.channel)
        return conversation if self.serves(interaction.guild_id, conversation) else None

    async def new(self, interaction: Any, prompt: str, template: str | None) -> None:
        where = self._where(interaction)
        if where is None:
            await self._tell(interaction, "This channel is not served.")
            return
        channel = interaction.channel
        if where.thread is None:  # a thread per session
            await interaction.response.defer(ephemeral=True, thinking=True)
            thread = await channel.create_thread(
                name=(prompt.strip() or template or "agent")[:THREAD_NAME_LIMIT],
                type=discord.ChannelType.public_thread,
            )
            where = Conversation(where.channel, str(thread.id))
            said = await commands.new(
                self.bridge, actor_of(interaction.user), where, prompt, template
            )
            await interaction.followup.send(f"{said} <#{thread.id}>", ephemeral=True)
            return
        said = await commands.new(self.bridge, actor_of(interaction.user), where, prompt, template)
        await self._tell(interaction, said)

    async def project(self, interaction: Any, path: str) -> None:
        where = self._where(interaction)
        said = (
            commands.project(self.bridge, actor_of(interaction.user), where, path)
            if where is not None
            else "This channel is not served."
        )
        await self._tell(interaction, said)

    async def simple(self, interaction: Any, name: str, query: str = "") -> None:
        """/status, /stop, /resume, /cost, /approve, /memory."""
        where = self._where(interaction)
        if where is None:
            await self._tell(interaction, "This channel is not served.")
            return
        await interaction.response.defer(ephemeral=True, thinking=True)  # the API may be slow
        actor = actor_of(interaction.user)
        if name == "status":
            said = await commands.status(self.bridge, where)
        elif name == "stop":
            said = await commands.stop(self.bridge, actor, where)
        elif name == "resume":
            said = await commands.resume(self.bridge, actor, where)
        elif name == "cost":
            said = await commands.cost(self.bridge, where)
        elif name == "approve":
            said = commands.approve(self.bridge, where)
        else:
            said = await commands.memory(self.bridge, query)
        await self._tell(interaction, said[:2000])


def install_commands(tree: app_commands.CommandTree[Any], frontend: Frontend) -> None:
    """The slash commands, each handed to the frontend."""

    @tree.command(name="new", description="Start an agent in a new thread")
    @app_commands.describe(prompt="What the agent should do", agent_template="An agent template")
    async def new(
        interaction: discord.Interaction, prompt: str = "", agent_template: str | None = None
    ) -> None:
        await frontend.new(interaction, prompt, agent_template)

    @tree.command(name="project", description="Bind this channel to a project (admins)")
    async def project(interaction: discord.Interaction, path: str) -> None:
        await frontend.project(interaction, path)

    @tree.command(name="memory", description="Search what agents learned before")
    async def memory(interaction: discord.Interaction, query: str) -> None:
        await frontend.simple(interaction, "memory", query)

    for name, text in (
        ("status", "This conversation's agent: state, turns"),
        ("stop", "Stop the agent's current turn"),
        ("resume", "Resume the agent's session"),
        ("cost", "What the agent has spent"),
        ("approve", "Requests waiting for an answer here"),
    ):
        tree.add_command(_simple_command(frontend, name, text))


def _simple_command(
    frontend: Frontend, name: str, text: str
) -> app_commands.Command[Any, Any, Any]:
    async def callback(interaction: discord.Interaction) -> None:
        await frontend.simple(interaction, name)

    return app_commands.Command(name=name, description=text, callback=callback)


class DeckBot(discord.Client):
    """The gateway client: message content intent for the conversation, guilds
    for channels and threads; no member or presence intents."""

    def __init__(self, frontend: Frontend | None = None, *, sync_commands: bool = True) -> None:
        # The bridge never joins voice: no warnings that voice's libraries are missing.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_messages = True
        intents.message_content = True
        super().__init__(intents=intents, allowed_mentions=discord.AllowedMentions.none())
        self.tree: app_commands.CommandTree[Any] = app_commands.CommandTree(self)
        self.frontend = frontend
        self.sync_commands = sync_commands  # once per run: Discord rate-limits it per day
        self.was_ready = False  # reached the gateway once (``gateway.Gateway`` counts tries)

    def attach(self, frontend: Frontend) -> None:
        self.frontend = frontend
        install_commands(self.tree, frontend)

    async def setup_hook(self) -> None:
        assert self.frontend is not None
        for guild in self.frontend.guilds:
            target = discord.Object(id=guild)
            self.tree.copy_global_to(guild=target)
            if self.sync_commands:
                await self.tree.sync(guild=target)

    async def on_ready(self) -> None:
        self.was_ready = True
        logger.info("Discord: connected to the gateway")

    async def resolve(self, channel_id: int) -> Any:
        return self.get_channel(channel_id) or await self.fetch_channel(channel_id)

    async def on_message(self, message: discord.Message) -> None:
        if self.frontend is not None:
            await self.frontend.on_message(message)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        if self.frontend is not None:
            await self.frontend.on_interaction(interaction)
