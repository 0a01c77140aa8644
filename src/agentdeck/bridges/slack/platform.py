"""The core's ``Platform`` on Slack's Web API: a thread per conversation, the
reply edited (``chat.update``) then chunked, files, reactions, and prompts with
Block Kit buttons. Agents' text never pings anyone: ``<``, ``>`` and ``&`` are
escaped (no ``<!channel>``, no ``<@U…>``) and nothing is unfurled."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agentdeck.bridges.platform import Conversation, Prompt, PromptKind

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 3000  # a section block's text; a message's text may be longer
PREFIX = "agentdeck"  # of every action id and modal callback id the bridge makes
BUSY = "hourglass_flowing_sand"  # on the thread's first message while the agent works
EMOJI = {"👀": "eyes", "✅": "white_check_mark", "❌": "x", "⏳": BUSY, "⛔": "no_entry"}


def escape(text: str) -> str:
    """Slack's control characters, as Slack asks: nothing in it is a mention or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def action_id(action: str, request_id: str) -> str:
    """``agentdeck:allow:<request>``: what a button press carries back."""
    return f"{PREFIX}:{action}:{request_id}"


def parse_action_id(value: str) -> tuple[str, str] | None:
    prefix, _, rest = value.partition(":")
    action, _, request_id = rest.partition(":")
    if prefix != PREFIX or not action or not request_id:
        return None
    return action, request_id


def prompt_blocks(prompt: Prompt) -> list[dict[str, Any]]:
    """The prompt's text and its buttons (handled by their action ids, so they
    still work after a restart)."""
    if prompt.kind is PromptKind.APPROVAL:
        buttons = [
            ("Allow once", "allow", "primary"),
            ("Always (this agent)", "always", None),
            ("Deny…", "deny", "danger"),
        ]
    else:
        buttons = [("Reply…", "reply", "primary")]
    elements = []
    for label, action, style in buttons:
        button: dict[str, Any] = {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": action_id(action, prompt.request_id),
            "value": prompt.request_id,
        }
        if style:
            button["style"] = style
        elements.append(button)
    return [*text_blocks(prompt.text), {"type": "actions", "elements": elements}]


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": escape(text)}}]


class SlackPlatform:
    name = "slack"
    message_limit = MESSAGE_LIMIT

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    @staticmethod
    def _where(conversation: Conversation) -> dict[str, Any]:
        where: dict[str, Any] = {"channel": conversation.channel}
        if conversation.thread:
            where["thread_ts"] = conversation.thread
        return where

    async def send(self, conversation: Conversation, text: str) -> str:
        sent = await self.client.chat_postMessage(
            **self._where(conversation),
            text=escape(text),
            unfurl_links=False,
            unfurl_media=False,
        )
        return str(sent["ts"])

    async def edit(self, conversation: Conversation, message_id: str, text: str) -> None:
        await self.client.chat_update(
            channel=conversation.channel, ts=message_id, text=escape(text)
        )

    async def attach(
        self, conversation: Conversation, filename: str, data: bytes, text: str
    ) -> str:
        sent = await self.client.files_upload_v2(
            channel=conversation.channel,
            thread_ts=conversation.thread,
            filename=filename,
            content=data,
            initial_comment=escape(text) if text else None,
        )
        files = sent.get("files") or [sent.get("file") or {}]
        return str(files[0].get("id", ""))

    async def react(self, conversation: Conversation, message_id: str, emoji: str) -> None:
        await self._reaction("add", conversation.channel, message_id, EMOJI.get(emoji, emoji))

    async def set_busy(self, conversation: Conversation, busy: bool) -> None:
        """Slack has no typing indicator for bots: an hourglass on the thread's
        first message while the agent works."""
        if conversation.thread is not None:
            await self._reaction(
                "add" if busy else "remove", conversation.channel, conversation.thread, BUSY
            )

    async def _reaction(self, how: str, channel: str, ts: str, name: str) -> None:
        call = self.client.reactions_add if how == "add" else self.client.reactions_remove
        try:
            await call(channel=channel, timestamp=ts, name=name)
        except SlackApiError as exc:  # already_reacted, no_reaction: no reason to stop
            logger.info("reaction %s %s failed: %s", how, name, exc.response.get("error"))

    async def prompt(self, conversation: Conversation, prompt: Prompt) -> str:
        sent = await self.client.chat_postMessage(
            **self._where(conversation),
            text=escape(prompt.text),
            blocks=prompt_blocks(prompt),
            unfurl_links=False,
            unfurl_media=False,
        )
        return str(sent["ts"])

    async def close_prompt(self, conversation: Conversation, message_id: str, text: str) -> None:
        await self.client.chat_update(
            channel=conversation.channel,
            ts=message_id,
            text=escape(text),
            blocks=text_blocks(text),
        )
