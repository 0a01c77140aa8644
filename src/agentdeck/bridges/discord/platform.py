"""The core's ``Platform`` on Discord: messages, edits, files, reactions, the
typing indicator, and prompts with buttons. Agents' text never pings anyone
(``AllowedMentions.none()``)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from agentdeck.bridges.platform import Conversation, Prompt, PromptKind

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 2000  # Discord's limit on a message's content
TYPING_REFRESH_SECONDS = 8.0  # the indicator lasts about 10 s
PREFIX = "agentdeck"  # of every custom id the bridge makes

Resolve = Callable[[int], Awaitable[Any]]  # a channel or thread id -> a Messageable


def custom_id(action: str, request_id: str) -> str:
    """``agentdeck:allow:<request>``: what a button press carries back."""
    return f"{PREFIX}:{action}:{request_id}"


def parse_custom_id(value: str) -> tuple[str, str] | None:
    prefix, _, rest = value.partition(":")
    action, _, request_id = rest.partition(":")
    if prefix != PREFIX or not action or not request_id:
        return None
    return action, request_id


def prompt_view(prompt: Prompt) -> discord.ui.View:
    """The buttons under a prompt. Presses are handled by the bot from their
    custom ids (so they still work after a restart), not by callbacks here."""
    view = discord.ui.View(timeout=None)
    if prompt.kind is PromptKind.APPROVAL:
        buttons = [
            ("Allow once", "allow", discord.ButtonStyle.success),
            ("Always (this agent)", "always", discord.ButtonStyle.primary),
            ("Deny…", "deny", discord.ButtonStyle.danger),
        ]
    else:
        buttons = [("Reply…", "reply", discord.ButtonStyle.primary)]
    for label, action, style in buttons:
        view.add_item(
            discord.ui.Button(
                label=label, style=style, custom_id=custom_id(action, prompt.request_id)
            )
        )
    return view


class DiscordPlatform:
    name = "discord"
    message_limit = MESSAGE_LIMIT

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve
        self._typing: dict[str, asyncio.Task[None]] = {}

    async def _target(self, conversation: Conversation) -> Any:
        return await self._resolve(int(conversation.thread or conversation.channel))

    async def send(self, conversation: Conversation, text: str) -> str:
        target = await self._target(conversation)
        sent = await target.send(text, allowed_mentions=discord.AllowedMentions.none())
        return str(sent.id)

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None:
        target = await self._target(conversation)
        await target.get_partial_message(int(message_id)).edit(
            content=text, allowed_mentions=discord.AllowedMentions.none()
        )

    async def attach(
        self, conversation: Conversation, filename: str, data: bytes, text: str
    ) -> str:
        target = await self._target(conversation)
        sent = await target.send(
            text or None,
            file=discord.File(io.BytesIO(data), filename=filename),
            allowed_mentions=discord.AllowedMentions.none(),
        )
        return str(sent.id)

    async def react(self, conversation: Conversation, message_id: str, emoji: str) -> None:
        target = await self._target(conversation)
        await target.get_partial_message(int(message_id)).add_reaction(emoji)

    async def set_busy(self, conversation: Conversation, busy: bool) -> None:
        running = self._typing.get(conversation.key)
        if busy and running is None:
            target = await self._target(conversation)
            self._typing[conversation.key] = asyncio.create_task(
                self._keep_typing(target), name=f"typing-{conversation.key}"
            )
        elif not busy and running is not None:
            del self._typing[conversation.key]
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running

    async def _keep_typing(self, target: Any) -> None:
        while True:
            try:
                await target.typing()
            except discord.HTTPException as exc:  # a lost indicator is no reason to stop
                logger.info("typing indicator failed: %s", exc)
            await asyncio.sleep(TYPING_REFRESH_SECONDS)

    async def prompt(self, conversation: Conversation, prompt: Prompt) -> str:
        target = await self._target(conversation)
        sent = await target.send(
            prompt.text, view=prompt_view(prompt), allowed_mentions=discord.AllowedMentions.none()
        )
        return str(sent.id)

    async def close_prompt(self, conversation: Conversation, message_id: str, text: str) -> None:
        target = await self._target(conversation)
        await target.get_partial_message(int(message_id)).edit(
            content=text, view=None, allowed_mentions=discord.AllowedMentions.none()
        )

    async def close(self) -> None:
        for task in self._typing.values():
            task.cancel()
        await asyncio.gather(*self._typing.values(), return_exceptions=True)
        self._typing.clear()
