"""One conversation's worker: its members' messages and its agent's events,
strictly in order.

The agent's events come from its own stream, resumed after ``cursor`` (the last
one delivered). The reply grows in a draft message, edited at most once per
``edit_interval``; text that no longer fits is sealed into chunks that never
break a code block, and delivered in order. State is saved before every platform
call, so a restart repeats at most one edit and never re-applies an event.

A post the platform cannot take for now (down, 5xx, 429) is kept and tried again
in place (``delivery.py``): what follows waits behind it, so the conversation
reads in order, each chunk once, when the platform answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from agentdeck.bridges import text as fmt
from agentdeck.bridges.daemon import feed_partial
from agentdeck.bridges.delivery import Undeliverable, deliver, from_platform
from agentdeck.bridges.platform import Conversation, Incoming
from agentdeck.bridges.reconnect import short_error
from agentdeck.bridges.state import ConversationState, Queued
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import StoredEvent
from agentdeck.core.partial import PartialText
from agentdeck.errors import AgentdeckError, ConfigError

if TYPE_CHECKING:
    from agentdeck.bridges.host import BridgeHost

logger = logging.getLogger(__name__)

T = TypeVar("T")

QUEUED = "⏳"  # a message that waits for the agent's turn to end
NOT_KEPT = (
    "⚠ A message {actor} queued held a secret, which the bridge does not write down: "
    "it was lost when the bridge restarted and was not sent. Send it again."
)
TAKEN = "👀"  # a message handed to the agent


class ConversationWorker:
    """One conversation: its members' messages and its agent's events, in order."""

    def __init__(self, bridge: BridgeHost, conversation: Conversation) -> None:
        self.bridge = bridge
        self.conversation = conversation
        self.inbox: asyncio.Queue[Incoming | StoredEvent | PartialText | Flush] = asyncio.Queue()
        self._follower: asyncio.Task[None] | None = None
        self._last_show = float("-inf")  # the first text shows at once
        # The text being written (never saved: its event brings it whole), by block.
        self._writing = ""
        self._writing_block: str | None = None
        self._flush_due = False
        self._timer: asyncio.Task[None] | None = None

    @property
    def state(self) -> ConversationState:
        return self.bridge.conversation(self.conversation.key)

    def follow(self, agent_id: str) -> None:
        if self._follower is None:
            self._follower = self.bridge._spawn(self._pump(agent_id), f"bridge-follow-{agent_id}")

    async def _pump(self, agent_id: str) -> None:
        events = feed_partial(self.bridge.deck, after=self.state.cursor, agent_id=agent_id)
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    self.inbox.put_nowait(event)
        except AgentdeckError as exc:  # the agent is gone: this conversation alone stops
            logger.warning("%s: no more events of %s: %s", self.conversation.key, agent_id, exc)

    async def run(self) -> None:
        if self.state.sealed or self.state.draft:
            self.inbox.put_nowait(Flush())  # what a restart interrupted, first
        while True:
            item = await self.inbox.get()
            try:
                if isinstance(item, Incoming):
                    await self._on_message(item)
                elif isinstance(item, StoredEvent):
                    await self._on_event(item)
                elif isinstance(item, PartialText):
                    await self._on_partial(item)
                else:
                    self._flush_due = False
                    await self._show(final=False)
            except Undeliverable:
                pass  # said in its one log line; the conversation goes on
            except AgentdeckError as exc:
                logger.warning("%s: %s", self.conversation.key, exc)
                notice = f"⚠ {exc.message}"
                await self._once(
                    "the error notice",
                    partial(self.bridge.platform.send, self.conversation, notice),
                )
            except Exception:  # one conversation's failure never stops the bridge
                logger.exception("bridge conversation %s failed", self.conversation.key)

    # -- members' messages -------------------------------------------------------------

    async def _on_message(self, message: Incoming) -> None:
        state = self.state
        bridge = self.bridge
        if state.agent_id is None:
            prompt = message.text.strip() or "I attached files."
            if message.uploads:
                names = ", ".join(u.filename for u in message.uploads)
                prompt += f"\n\n(Attached files are being saved under uploads/: {names})"
            fields = {**bridge.config.agent, "prompt": prompt}
            fields.setdefault("name", f"{bridge.platform.name}-{self.conversation.key}")
            channel = bridge.state.conversations.get(self.conversation.channel)
            project = state.project or (channel.project if channel else None)
            if project:
                fields["cwd"] = project
            agent = await bridge.deck_for(message.author).create_agent(
                spec_of(fields), keep_alive=True, template=state.template or bridge.config.template
            )
            state.agent_id, state.cursor, state.busy = agent.id, 0, True
            bridge._roots[agent.id] = self.conversation.key
            bridge.save()
            bridge.record(message.author, "started", agent=agent.id)
            self.follow(agent.id)
            await self._upload(message)
            await self._ack(message, TAKEN)
            return
        text = message.text.strip() or "I attached files."
        saved = await self._upload(message)
        if saved:
            text += f"\n\n(Attached, saved in your workspace: {', '.join(saved)})"
        if state.busy:
            state.queue.append(Queued(text, message.author.tag))
            bridge.save()
            bridge.record(message.author, "queued", agent=state.agent_id)
            await self._ack(message, QUEUED)
            if bridge.config.on_busy == "interrupt":
                await bridge.deck_for(message.author).interrupt(state.agent_id)
            return
        await self._send(text, message.author.tag)
        bridge.record(message.author, "sent", agent=state.agent_id)
        await self._ack(message, TAKEN)

    async def _upload(self, message: Incoming) -> list[str]:
        """The message's files, saved in the agent's workspace: their paths there."""
        agent_id = self.state.agent_id
        assert agent_id is not None
        saved = []
        deck = self.bridge.deck_for(message.author)
        for upload in message.uploads:
            saved.append(await deck.upload(agent_id, upload.filename, upload.data))
            self.bridge.record(message.author, "uploaded", agent=agent_id, path=saved[-1])
        return saved

    async def _send(self, text: str, actor: str) -> None:
        assert self.state.agent_id is not None
        self.state.busy = True
        self.bridge.save()
        try:
            await self.bridge.deck_for(actor).send(self.state.agent_id, text)
        except AgentdeckError:
            self.state.busy = False  # nothing was sent: the next message goes straight on
            self.bridge.save()
            raise

    async def _ack(self, message: Incoming, emoji: str) -> None:
        if message.message_id:
            mid = message.message_id
            await self._once(
                f"the {emoji} reaction",
                lambda: self.bridge.platform.react(self.conversation, mid, emoji),
            )

    # -- reaching the platform ---------------------------------------------------------

    def _what(self, what: str) -> str:
        return f"{self.bridge.platform.name}: {what} in {self.conversation.key}"

    async def _post(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """A post that must get through: tried again while the platform is down."""
        return await deliver(self._what(what), call, self.bridge.config.retry)

    async def _once(self, what: str, call: Callable[[], Awaitable[object]]) -> None:
        """A post that may be missed (a reaction, the typing sign, a notice): one
        try, and a platform's failure is one log line."""
        try:
            await call()
        except AgentdeckError as exc:
            logger.warning("%s failed: %s", self._what(what), exc)
        except Exception as exc:
            if not from_platform(exc):
                raise
            logger.warning("%s failed (%s); not retried", self._what(what), short_error(exc))

    # -- the agent's events ------------------------------------------------------------

    async def _on_event(self, event: StoredEvent) -> None:
        state = self.state
        if event.id <= state.cursor:
            return
        data = event.data
        top_level = data.get("parent_tool_use_id") is None
        final = False
        attachment: tuple[str, bytes] | None = None
        if event.type == "assistant_text" and top_level:
            self._writing, self._writing_block = "", None  # the text, whole
        if event.type == "assistant_text" and top_level and str(data.get("text", "")).strip():
            self._add(str(data["text"]), tool=False)
        elif event.type == "tool_called" and top_level:
            self._add(fmt.tool_line(str(data["tool"]), data.get("input") or {}), tool=True)
        elif event.type == "tool_returned" and top_level:
            output = str(data.get("output", ""))
            if len(output) > self.bridge.config.attach_over or data.get("truncated"):
                name = fmt.attachment_name("output", str(data.get("tool_use_id", "")))
                attachment = (name, output.encode())
        elif event.type == "error_occurred":
            self._add(f"⚠ {data.get('message', 'error')}", tool=True)
        elif event.type == "state_changed":
            new = AgentState(str(data["new"]))
            await self._once(
                "the busy sign",
                lambda: self.bridge.platform.set_busy(self.conversation, new.is_busy),
            )
            final = not new.is_busy and new is not AgentState.STARTING
        if attachment is not None:
            # The cursor moves once the file is posted: a restart before posts it again.
            await self._show(final=True)
            name, blob = attachment
            try:
                await self._post(
                    f"the attachment {name}",
                    lambda: self.bridge.platform.attach(self.conversation, name, blob, ""),
                )
            except Undeliverable:
                state.cursor = event.id  # refused for good: not tried again
                self.bridge.save()
                raise
            state.cursor = event.id
            self.bridge.save()
            return
        state.cursor = event.id
        if final:
            state.busy = False
            self.bridge.save()
            await self._show(final=True)
            while state.queue:
                queued = state.queue.pop(0)
                if queued.kept:
                    await self._send(queued.text, queued.actor)
                    break
                # Only its redacted copy survived a restart: never sent as if whole.
                self.bridge.save()
                notice = NOT_KEPT.format(actor=queued.actor)
                await self._post(
                    "the lost message's notice",
                    partial(self.bridge.platform.send, self.conversation, notice),
                )
            return
        self.bridge.save()
        await self._maybe_show()

    async def _on_partial(self, edit: PartialText) -> None:
        """The text being written: shown in the draft as the edits come (throttled as
        every edit of it is), never sealed or saved; a subagent's, or a block joined
        midway or with an edit missed, is left to its event."""
        if edit.parent_tool_use_id is not None:
            return
        if edit.block != self._writing_block:
            if edit.offset != 0:
                return
            self._writing, self._writing_block = "", edit.block
        if edit.offset > len(self._writing):
            return
        self._writing = edit.applied(self._writing)
        await self._maybe_show()

    def _add(self, part: str, *, tool: bool) -> None:
        state = self.state
        state.draft = fmt.append_part(
            state.draft, part, tool=tool, last_was_tool=state.last_was_tool
        )
        state.last_was_tool = tool

    async def _maybe_show(self) -> None:
        wait = self._last_show + self.bridge.config.edit_interval - time.monotonic()
        if wait <= 0:
            await self._show(final=False)
        elif not self._flush_due:
            self._flush_due = True
            self._timer = self.bridge._spawn(self._flush_later(wait), "bridge-flush")

    async def _flush_later(self, wait: float) -> None:
        await asyncio.sleep(wait)
        self.inbox.put_nowait(Flush())

    async def _show(self, *, final: bool) -> None:
        """Seal what is complete (everything, when ``final``), deliver the sealed
        chunks in order, then show the rest in the draft message. State is saved
        before each platform call: a restart repeats at most one edit."""
        if self._timer is not None and not self._timer.done():
            self._timer.cancel()  # what it would show is shown now
        self._flush_due = False
        state = self.state
        platform = self.bridge.platform
        limit = platform.message_limit
        parts = fmt.split_parts(state.draft, limit)
        if final:
            state.sealed += [h + b + t for h, b, t in parts]
            state.draft, state.last_was_tool = "", False
        elif len(parts) > 1:
            state.sealed += [h + b + t for h, b, t in parts[:-1]]
            state.draft = parts[-1][0] + parts[-1][1]
        self.bridge.save()
        conv = self.conversation
        while state.sealed:
            chunk = state.sealed[0]
            try:
                if state.draft_id is not None:
                    draft_id = state.draft_id
                    await self._post(
                        "a reply chunk (the draft's last edit)",
                        partial(platform.edit, conv, draft_id, chunk),
                    )
                    state.draft_id = None
                else:
                    await self._post("a reply chunk", partial(platform.send, conv, chunk))
            except Undeliverable:
                if state.draft_id is not None:  # the draft is gone: the chunk, new
                    state.draft_id = None
                    continue
                # Refused for good (said in its log line): the rest goes on.
            state.sealed.pop(0)
            self.bridge.save()
        if final:
            self._writing, self._writing_block = "", None
        view = state.draft
        if self._writing.strip():
            view = fmt.append_part(
                state.draft, self._writing.rstrip(), tool=False, last_was_tool=state.last_was_tool
            )
        if view.strip():
            shown = fmt.split_message(view, limit)[0]
            if state.draft_id is None:
                state.draft_id = await self._post(
                    "the reply's draft", lambda: platform.send(conv, shown)
                )
                self.bridge.save()
            else:
                draft_id = state.draft_id
                await self._post(
                    "an edit of the reply's draft", lambda: platform.edit(conv, draft_id, shown)
                )
        elif final:
            state.draft_id = None
            self.bridge.save()
        self._last_show = time.monotonic()


@dataclass(frozen=True)
class Flush:
    pass


# ``claude`` (a template's Claude Code keys: hooks, MCP servers, permission mode)
# comes from a template, read and held to its profile there, never raw from a
# bridge's config.
_SPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(AgentSpec)) - {"claude"}


def spec_of(fields: Mapping[str, Any]) -> AgentSpec:
    """A new agent's spec from the bridge's defaults and the conversation's own. A
    field no spec has is refused (``ConfigError``), never dropped: the agent would
    run otherwise than configured."""
    unknown = sorted(set(fields) - _SPEC_FIELDS)
    if unknown:
        raise ConfigError(
            f"the bridge's agent defaults name no agent setting: {', '.join(unknown)}"
        )
    return AgentSpec.from_dict(dict(fields))
