"""What slack-bolt hands the bridge, handed on to the core.

``Frontend`` is the seam: its methods take the payloads of Slack's events,
button presses, modal submissions and the ``/agentdeck`` command (as bolt
passes them, after acknowledging) and act through the core. A top-level
message in an allow-listed channel starts a session in its thread; replies in
the thread follow it up. Messages from bots (and edits, joins, …) are ignored;
the core decides who may answer a prompt. ``build_app`` registers it all on a
bolt ``AsyncApp``.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agentdeck.bridges import commands
from agentdeck.bridges.core import Bridge
from agentdeck.bridges.platform import Actor, Conversation, Incoming
from agentdeck.bridges.slack.platform import action_id, escape, parse_action_id

logger = logging.getLogger(__name__)

INPUT_LIMIT = 1000  # characters of a reason or an answer typed in a modal
HEARD_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})  # members' messages
NOT_SERVED = "This channel is not served."
USAGE = (
    "Usage: /agentdeck new [template=NAME] [PROMPT] | project PATH | status | stop | "
    "resume | cost | approve | memory QUERY. Commands other than new act on the "
    "channel's newest thread."
)
ANCHORED = re.compile(r"^agentdeck:")


def actor_of(user_id: str, name: str | None = None) -> Actor:
    """A Slack member as the core knows them: approvers are listed by member id."""
    return Actor("slack", user_id, name or user_id, frozenset())


class Frontend:
    def __init__(self, bridge: Bridge, client: AsyncWebClient) -> None:
        self.bridge = bridge
        self.client = client

    async def tell(self, channel: str, user: str, text: str, thread: str | None = None) -> None:
        """An answer only the member who acted sees."""
        await self.client.chat_postEphemeral(
            channel=channel, user=user, text=escape(text), thread_ts=thread
        )

    # -- messages ------------------------------------------------------------------------

    async def on_message(self, event: dict[str, Any]) -> None:
        if event.get("bot_id") or event.get("subtype") not in HEARD_SUBTYPES:
            return
        user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
        if not user or not channel or not ts:
            return
        conversation = Conversation(str(channel), str(event.get("thread_ts") or ts))
        if not self.bridge.allowed(conversation):
            return
        await self.bridge.handle(
            Incoming(conversation, actor_of(str(user)), str(event.get("text") or ""), str(ts))
        )

    # -- buttons and modals --------------------------------------------------------------

    async def on_action(self, body: dict[str, Any]) -> None:
        [action] = body.get("actions") or [{}]
        parsed = parse_action_id(str(action.get("action_id", "")))
        channel = str((body.get("channel") or {}).get("id", ""))
        user = body.get("user") or {}
        if parsed is None or not channel or not user.get("id"):
            return
        what, request_id = parsed
        message = body.get("message") or {}
        thread = message.get("thread_ts") or (body.get("container") or {}).get("thread_ts")
        conversation = Conversation(channel, str(thread) if thread else None)
        uid = str(user["id"])
        if not self.bridge.allowed(conversation):
            await self.tell(channel, uid, NOT_SERVED)
            return
        actor = actor_of(uid, user.get("username") or user.get("name"))
        if what in ("allow", "always"):
            said = await self.bridge.decide(actor, request_id, "allow", always=what == "always")
        elif what in ("deny", "reply") and not self.bridge.may_decide(actor):
            said = (
                await self.bridge.decide(actor, request_id, "deny")
                if what == "deny"
                else await self.bridge.reply(actor, request_id, "")
            )
        elif what in ("deny", "reply"):
            await self.client.views_open(
                trigger_id=body["trigger_id"], view=modal(what, request_id, conversation)
            )
            return
        else:
            said = "Unknown action."
        await self.tell(channel, uid, said, conversation.thread)

    async def on_view(self, body: dict[str, Any]) -> None:
        view = body.get("view") or {}
        parsed = parse_action_id(str(view.get("callback_id", "")))
        user = body.get("user") or {}
        try:
            conversation = Conversation.from_key(str(json.loads(view["private_metadata"])["c"]))
        except (KeyError, TypeError, ValueError):
            return
        if parsed is None or not user.get("id") or not self.bridge.allowed(conversation):
            return
        what, request_id = parsed
        actor = actor_of(str(user["id"]), user.get("username") or user.get("name"))
        typed = next(_values((view.get("state") or {}).get("values")), "")
        if what == "deny-why":
            said = await self.bridge.decide(actor, request_id, "deny", reason=typed.strip() or None)
        elif what == "answer":
            said = await self.bridge.reply(actor, request_id, typed)
        else:
            return
        await self.tell(conversation.channel, actor.id, said, conversation.thread)

    # -- /agentdeck ----------------------------------------------------------------------

    async def on_command(self, body: dict[str, Any]) -> None:
        channel, user = str(body.get("channel_id", "")), str(body.get("user_id", ""))
        name, _, rest = str(body.get("text") or "").strip().partition(" ")
        rest = rest.strip()
        actor = actor_of(user, body.get("user_name"))
        if not self.bridge.allowed(Conversation(channel)):
            said = NOT_SERVED
        elif name == "new":
            said = await self.new(actor, channel, rest)
        elif name == "project":
            said = commands.project(self.bridge, actor, Conversation(channel), rest)
        elif name == "memory":
            said = await commands.memory(self.bridge, rest)
        elif name in ("status", "stop", "resume", "cost", "approve"):
            said = await self.simple(actor, name, self.newest(channel))
        else:
            said = USAGE
        await self.tell(channel, user, said)

    async def new(self, actor: Actor, channel: str, rest: str) -> str:
        """A thread per session: a first message for it, by the bot, then the agent."""
        template = None
        if rest.startswith("template="):
            first, _, rest = rest.partition(" ")
            template = first.removeprefix("template=") or None
        root = await self.client.chat_postMessage(
            channel=channel,
            text=escape(f"🧵 {rest.strip() or template or 'A new agent'} (by {actor.name})"),
        )
        where = Conversation(channel, str(root["ts"]))
        return await commands.new(self.bridge, actor, where, rest.strip(), template)

    def newest(self, channel: str) -> Conversation:
        """The channel's newest thread with an agent (Slack has no commands in threads)."""
        threads = [
            Conversation.from_key(key)
            for key, conv in self.bridge.state.conversations.items()
            if key.startswith(channel + "/") and conv.agent_id is not None
        ]
        return max(threads, key=lambda c: float(c.thread or 0), default=Conversation(channel))

    async def simple(self, actor: Actor, name: str, where: Conversation) -> str:
        if name == "status":
            return await commands.status(self.bridge, where)
        if name == "stop":
            return await commands.stop(self.bridge, actor, where)
        if name == "resume":
            return await commands.resume(self.bridge, actor, where)
        if name == "cost":
            return await commands.cost(self.bridge, where)
        return commands.approve(self.bridge, where)


def modal(what: str, request_id: str, conversation: Conversation) -> dict[str, Any]:
    """Deny with an optional reason, or an answer to an agent's question."""
    deny = what == "deny"
    return {
        "type": "modal",
        "callback_id": action_id("deny-why" if deny else "answer", request_id),
        "private_metadata": json.dumps({"c": conversation.key}),
        "title": {"type": "plain_text", "text": "Deny the request" if deny else "Answer the agent"},
        "submit": {"type": "plain_text", "text": "Deny" if deny else "Answer"},
        "blocks": [
            {
                "type": "input",
                "block_id": "typed",
                "optional": deny,
                "label": {
                    "type": "plain_text",
                    "text": "Reason (told to the agent)" if deny else "Your answer",
                },
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "multiline": True,
                    "max_length": INPUT_LIMIT,
                },
            }
        ],
    }


def _values(data: Any) -> Any:
    """Every value typed into a modal's inputs."""
    if isinstance(data, dict):
        if isinstance(data.get("value"), str):
            yield data["value"]
        for value in data.values():
            yield from _values(value)


def build_app(frontend: Frontend) -> AsyncApp:
    """The bolt app: every listener acknowledges first (Slack wants it within 3 s)."""
    app = AsyncApp(client=frontend.client, request_verification_enabled=False)

    @app.event("message")
    async def message(event: dict[str, Any]) -> None:
        await frontend.on_message(event)

    @app.action(ANCHORED)
    async def action(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        await frontend.on_action(body)

    @app.view(ANCHORED)
    async def view(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        await frontend.on_view(body)

    @app.command("/agentdeck")
    async def command(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        await frontend.on_command(body)

    return app
