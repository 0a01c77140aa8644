"""The platform-neutral bridge: conversations ↔ agents, through the daemon's API.

Each conversation has one worker that takes, strictly in order, the members'
messages and its agent's events (read from the daemon's stream, resumed after
the last delivered one). A message that arrives while the agent works is queued
and sent when its turn ends (or, by setting, interrupts it). The reply grows in
one message, edited at most once per ``edit_interval``; what no longer fits is
sealed into chunks that never break a code block. Tool calls are one line each;
a long tool output is an attachment.

A second stream, over every agent, brings permission requests and questions for
a person from the conversations' agents and the agents they started: they are
posted as prompts, answered only by allow-listed members, and updated with who
answered (or that nobody did before the timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentdeck.bridges import text as fmt
from agentdeck.bridges.daemon_client import Actor, DaemonClient
from agentdeck.bridges.platform import (
    Conversation,
    Incoming,
    Platform,
    Prompt,
    PromptKind,
)
from agentdeck.bridges.state import (
    BridgeState,
    ConversationState,
    OpenPrompt,
    Queued,
    StateFile,
)
from agentdeck.core.agent import AgentState
from agentdeck.errors import AgentdeckError

logger = logging.getLogger(__name__)

POSITION_SAVE_EVERY = 500  # events of no interest between two saves of the position
PROMPT_ANSWER_ROOM = 300  # characters of a prompt kept for who answered, and how
QUEUED = "⏳"
TAKEN = "👀"
_PROMPT_EVENTS = frozenset(
    {"permission_requested", "permission_resolved", "question_asked", "question_answered"}
)


@dataclass(frozen=True)
class BridgeConfig:
    channels: frozenset[str]  # channels served (threads in them too); empty: none
    approvers: frozenset[str] = frozenset()  # member ids, or "role:<name>"; empty: nobody
    admins: frozenset[str] = frozenset()  # who may /project; empty: nobody
    project_roots: tuple[str, ...] = ()  # where /project may point
    on_busy: Literal["queue", "interrupt"] = "queue"
    edit_interval: float = 1.0
    attach_over: int = 1500  # characters of tool output shown as an attachment, not at all
    agent: Mapping[str, Any] = field(default_factory=dict)  # POST /api/agents defaults


class Bridge:
    def __init__(
        self, platform: Platform, client: DaemonClient, state_path: Path, config: BridgeConfig
    ) -> None:
        self.platform = platform
        self.client = client
        self.config = config
        self._file = StateFile(state_path)
        self._actions = state_path.with_name(state_path.stem + "-actions.jsonl")
        self.state: BridgeState = self._file.load()
        self._workers: dict[str, _Worker] = {}
        self._roots: dict[str, str | None] = {}  # agent -> conversation key (or None)
        self._tg: asyncio.TaskGroup | None = None
        self.ready = asyncio.Event()

    # -- running ---------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until cancelled."""
        async with asyncio.TaskGroup() as tg:
            self._tg = tg
            for key, conv in self.state.conversations.items():
                if conv.agent_id is not None:
                    self._worker(key)
            tg.create_task(self._follow_prompts(), name="bridge-prompts")
            self.ready.set()

    def save(self) -> None:
        self._file.save(self.state)

    def record(self, actor: Actor, action: str, **detail: Any) -> None:
        """Who did what from chat, one JSON line each (approvals and answers are
        in the daemon's audit log too, under the member's name)."""
        line = {"ts": time.time(), "actor": actor.tag, "action": action, **detail}
        logger.info("bridge: %s %s %s", actor.tag, action, detail)
        fd = os.open(self._actions, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")

    def allowed(self, conversation: Conversation) -> bool:
        return conversation.channel in self.config.channels

    def may_decide(self, actor: Actor) -> bool:
        """Deny when unsure: only a listed member or a member with a listed role."""
        approvers = self.config.approvers
        return actor.id in approvers or any(f"role:{r}" in approvers for r in actor.roles)

    # -- what people do ------------------------------------------------------------------

    async def handle(self, message: Incoming) -> None:
        """A member's message: queued for its conversation's worker (in order)."""
        if message.from_bot or not self.allowed(message.conversation):
            return
        if not message.text.strip() and not message.uploads:
            return
        await self.ready.wait()
        self._worker(message.conversation.key).inbox.put_nowait(message)

    async def decide(
        self,
        actor: Actor,
        request_id: str,
        decision: Literal["allow", "deny"],
        *,
        always: bool = False,
        reason: str | None = None,
    ) -> str:
        """A member pressed Allow / Always / Deny. Returns what to tell them (only them)."""
        if request_id not in self.state.prompts:
            return "This request is no longer open."
        if not self.may_decide(actor):
            self.record(actor, "refused", request=request_id, wanted=decision)
            return "You may not answer approvals here: ask someone with the approver role."
        try:
            await self.client.answer_approval(
                request_id, decision, actor=actor, always=always, message=reason
            )
        except AgentdeckError as exc:
            return f"Not answered: {exc.message}"
        self.record(actor, decision, request=request_id, always=always, reason=reason)
        return "Allowed." if decision == "allow" else "Denied."

    async def reply(self, actor: Actor, ask_id: str, answer: str) -> str:
        """A member answered an agent's question."""
        if ask_id not in self.state.prompts:
            return "This question is no longer open."
        if not self.may_decide(actor):
            self.record(actor, "refused", ask=ask_id)
            return "You may not answer agents' questions here: ask someone with the approver role."
        if not answer.strip():
            return "An empty answer is no answer."
        try:
            await self.client.answer_ask(ask_id, answer, actor=actor)
        except AgentdeckError as exc:
            return f"Not answered: {exc.message}"
        self.record(actor, "answered", ask=ask_id)
        return "Answered."

    # -- conversations -----------------------------------------------------------------

    def conversation(self, key: str) -> ConversationState:
        return self.state.conversations.setdefault(key, ConversationState())

    def _worker(self, key: str) -> _Worker:
        worker = self._workers.get(key)
        if worker is None:
            assert self._tg is not None, "the bridge is not running"
            worker = _Worker(self, Conversation.from_key(key))
            self._workers[key] = worker
            self._tg.create_task(worker.run(), name=f"bridge-{key}")
            conv = self.conversation(key)
            if conv.agent_id is not None:
                self._roots[conv.agent_id] = key
                worker.follow(conv.agent_id)
        return worker

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        assert self._tg is not None
        return self._tg.create_task(coro, name=name)

    # -- prompts -------------------------------------------------------------------------

    async def _follow_prompts(self) -> None:
        if self.state.position is None:  # the first start: from now on
            stats = await self.client.call("GET", "/api/stats")
            self.state.position = int(stats["last_event_id"])
            self.save()
        saved = self.state.position
        async for event in self.client.events(after=self.state.position):
            self.state.position = event.id
            if event.type in _PROMPT_EVENTS:
                try:
                    await self._on_prompt_event(event.agent_id, event.type, event.data)
                except AgentdeckError as exc:
                    logger.warning("could not show %s %d: %s", event.type, event.id, exc)
                except Exception:  # the bridge serves on
                    logger.exception("prompt event %d failed", event.id)
            elif event.id - saved < POSITION_SAVE_EVERY:
                continue  # other agents' chatter: the position is saved now and then
            self.save()
            saved = event.id

    async def _conversation_of(self, agent_id: str) -> str | None:
        """The conversation whose agent this is, or started it (however deep)."""
        if agent_id in self._roots:
            return self._roots[agent_id]
        try:
            parent = (await self.client.agent(agent_id)).get("parent_id")
        except AgentdeckError:
            return None
        found = await self._conversation_of(parent) if parent else None
        self._roots[agent_id] = found
        return found

    async def _on_prompt_event(self, agent_id: str, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "permission_requested":
            request = str(data["request_id"])
            key = await self._conversation_of(agent_id)
            if key is None or request in self.state.prompts:
                return
            name = await self._name(agent_id)
            text = fmt.approval_text(
                name, str(data["tool"]), data.get("input") or {}, data.get("reason")
            )
            await self._post_prompt(key, Prompt(PromptKind.APPROVAL, request, text))
        elif kind == "question_asked" and data.get("to_agent_id") is None:
            ask = str(data["ask_id"])
            key = await self._conversation_of(agent_id)
            if key is None or ask in self.state.prompts:
                return
            text = fmt.ask_text(await self._name(agent_id), str(data["question"]))
            await self._post_prompt(key, Prompt(PromptKind.ASK, ask, text))
        elif kind == "permission_resolved":
            shown = self.state.prompts.pop(str(data["request_id"]), None)
            if shown is not None:
                closed = fmt.resolved_text(
                    shown.text, str(data["decision"]), data.get("by"), data.get("reason")
                )
                await self.platform.close_prompt(
                    Conversation.from_key(shown.conversation), shown.message_id, closed
                )
        elif kind == "question_answered":
            shown = self.state.prompts.pop(str(data["ask_id"]), None)
            if shown is not None:
                closed = fmt.answered_text(shown.text, data.get("answer"), data.get("by"))
                await self.platform.close_prompt(
                    Conversation.from_key(shown.conversation), shown.message_id, closed
                )

    async def _post_prompt(self, key: str, prompt: Prompt) -> None:
        # Room is left for the line that says who answered.
        room = max(self.platform.message_limit - PROMPT_ANSWER_ROOM, 32)
        if len(prompt.text) > room:
            prompt = Prompt(prompt.kind, prompt.request_id, prompt.text[: room - 1] + "…")
        message_id = await self.platform.prompt(Conversation.from_key(key), prompt)
        self.state.prompts[prompt.request_id] = OpenPrompt(
            conversation=key, message_id=message_id, kind=str(prompt.kind), text=prompt.text
        )

    async def _name(self, agent_id: str) -> str:
        try:
            return str((await self.client.agent(agent_id))["name"])
        except AgentdeckError:
            return agent_id


class _Worker:
    """One conversation: its members' messages and its agent's events, in order."""

    def __init__(self, bridge: Bridge, conversation: Conversation) -> None:
        self.bridge = bridge
        self.conversation = conversation
        self.inbox: asyncio.Queue[Incoming | _Event | _Flush] = asyncio.Queue()
        self._follower: asyncio.Task[None] | None = None
        self._last_show = float("-inf")  # the first text shows at once
        self._flush_due = False
        self._timer: asyncio.Task[None] | None = None

    @property
    def state(self) -> ConversationState:
        return self.bridge.conversation(self.conversation.key)

    def follow(self, agent_id: str) -> None:
        if self._follower is None:
            self._follower = self.bridge._spawn(self._pump(agent_id), f"bridge-follow-{agent_id}")

    async def _pump(self, agent_id: str) -> None:
        try:
            async for event in self.bridge.client.events(after=self.state.cursor, agent=agent_id):
                self.inbox.put_nowait(_Event(event.id, event.type, event.data))
        except AgentdeckError as exc:  # the agent is gone: this conversation alone stops
            logger.warning("%s: no more events of %s: %s", self.conversation.key, agent_id, exc)

    async def run(self) -> None:
        if self.state.sealed or self.state.draft:
            self.inbox.put_nowait(_Flush())  # what a restart interrupted, first
        while True:
            item = await self.inbox.get()
            try:
                if isinstance(item, Incoming):
                    await self._on_message(item)
                elif isinstance(item, _Event):
                    await self._on_event(item)
                else:
                    self._flush_due = False
                    await self._show(final=False)
            except AgentdeckError as exc:
                logger.warning("%s: %s", self.conversation.key, exc)
                with contextlib.suppress(AgentdeckError):
                    await self.bridge.platform.send(self.conversation, f"⚠ {exc.message}")
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
            body = {**bridge.config.agent, "prompt": prompt, "keep_alive": True}
            body.setdefault("name", f"{bridge.platform.name}-{self.conversation.key}")
            channel = bridge.state.conversations.get(self.conversation.channel)
            project = state.project or (channel.project if channel else None)
            if project:
                body["cwd"] = project
            if state.template:
                body["agent"] = state.template
            agent = await bridge.client.create_agent(body)
            state.agent_id, state.cursor, state.busy = agent["id"], 0, True
            bridge._roots[agent["id"]] = self.conversation.key
            bridge.save()
            bridge.record(message.author, "started", agent=agent["id"])
            self.follow(agent["id"])
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
                await bridge.client.interrupt(state.agent_id)
            return
        await self._send(text)
        bridge.record(message.author, "sent", agent=state.agent_id)
        await self._ack(message, TAKEN)

    async def _upload(self, message: Incoming) -> list[str]:
        """The message's files, saved in the agent's workspace: their paths there."""
        agent_id = self.state.agent_id
        assert agent_id is not None
        saved = []
        for upload in message.uploads:
            saved.append(await self.bridge.client.upload(agent_id, upload.filename, upload.data))
            self.bridge.record(message.author, "uploaded", agent=agent_id, path=saved[-1])
        return saved

    async def _send(self, text: str) -> None:
        assert self.state.agent_id is not None
        self.state.busy = True
        self.bridge.save()
        try:
            await self.bridge.client.send(self.state.agent_id, text)
        except AgentdeckError:
            self.state.busy = False  # nothing was sent: the next message goes straight on
            self.bridge.save()
            raise

    async def _ack(self, message: Incoming, emoji: str) -> None:
        if message.message_id:
            await self.bridge.platform.react(self.conversation, message.message_id, emoji)

    # -- the agent's events ------------------------------------------------------------

    async def _on_event(self, event: _Event) -> None:
        state = self.state
        if event.id <= state.cursor:
            return
        data = event.data
        top_level = data.get("parent_tool_use_id") is None
        final = False
        attachment: tuple[str, bytes] | None = None
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
            await self.bridge.platform.set_busy(self.conversation, new.is_busy)
            final = not new.is_busy and new is not AgentState.STARTING
        state.cursor = event.id
        if attachment is not None:
            self.bridge.save()
            await self._show(final=True)
            await self.bridge.platform.attach(self.conversation, *attachment, "")
            return
        if final:
            state.busy = False
            self.bridge.save()
            await self._show(final=True)
            if state.queue:
                queued = state.queue.pop(0)
                await self._send(queued.text)
            return
        self.bridge.save()
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
        self.inbox.put_nowait(_Flush())

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
        while state.sealed:
            chunk = state.sealed[0]
            if state.draft_id is not None:
                await platform.edit(self.conversation, state.draft_id, chunk)
                state.draft_id = None
            else:
                await platform.send(self.conversation, chunk)
            state.sealed.pop(0)
            self.bridge.save()
        if state.draft.strip():
            shown = fmt.split_message(state.draft, limit)[0]
            if state.draft_id is None:
                state.draft_id = await platform.send(self.conversation, shown)
                self.bridge.save()
            else:
                await platform.edit(self.conversation, state.draft_id, shown)
        elif final:
            state.draft_id = None
            self.bridge.save()
        self._last_show = time.monotonic()


@dataclass(frozen=True)
class _Event:
    id: int
    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class _Flush:
    pass
