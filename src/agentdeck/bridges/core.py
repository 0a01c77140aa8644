"""The platform-neutral bridge: conversations ↔ agents, through the daemon's deck
(the Deck interface over its API, acting for the member who asked: ``daemon.py``).

Each conversation has one worker (``conversation.py``) that takes, strictly in order, the members'
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
from pathlib import Path
from typing import Any, Literal

from agentdeck.bridges import text as fmt
from agentdeck.bridges.conversation import ConversationWorker
from agentdeck.bridges.daemon import feed
from agentdeck.bridges.delivery import Undeliverable, deliver
from agentdeck.bridges.host import ActingDeck, BridgeConfig
from agentdeck.bridges.platform import (
    Actor,
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
    StateFile,
)
from agentdeck.core.approvals import GrantScope
from agentdeck.core.deck import Deck
from agentdeck.core.redact import scrub_value
from agentdeck.errors import AgentdeckError

logger = logging.getLogger(__name__)

POSITION_SAVE_EVERY = 500  # events of no interest between two saves of the position
PROMPT_ANSWER_ROOM = 300  # characters of a prompt kept for who answered, and how
_PROMPT_EVENTS = frozenset(
    {"permission_requested", "permission_resolved", "question_asked", "question_answered"}
)


class Bridge:
    def __init__(
        self, platform: Platform, deck: ActingDeck, state_path: Path, config: BridgeConfig
    ) -> None:
        self.platform = platform
        self.deck = deck
        self.config = config
        self._file = StateFile(state_path)
        self._actions = state_path.with_name(state_path.stem + "-actions.jsonl")
        self.state: BridgeState = self._file.load()
        self._workers: dict[str, ConversationWorker] = {}
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

    def deck_for(self, actor: Actor | str) -> Deck:
        """The deck acting for a member (``Actor``, or its ``tag``): what they do
        from chat is theirs in the daemon's audit log and ``answered_by``."""
        return self.deck.acting_for(actor.tag if isinstance(actor, Actor) else actor)

    def save(self) -> None:
        """Written in the state file's own thread, newest last (``state.py``)."""
        self._file.save_soon(self.state)

    def record(self, actor: Actor, action: str, **detail: Any) -> None:
        """Who did what from chat, one JSON line each (approvals and answers are
        in the daemon's audit log too, under the member's name)."""
        detail = scrub_value(detail)  # an approver's reason may quote a secret
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
            # "Always" is for this agent (its session), never every agent of its profile.
            await self.deck_for(actor).answer(
                request_id,
                decision,
                message=reason or None,
                remember=GrantScope.SESSION if always else None,
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
            await self.deck_for(actor).answer_ask(ask_id, answer)
        except AgentdeckError as exc:
            return f"Not answered: {exc.message}"
        self.record(actor, "answered", ask=ask_id)
        return "Answered."

    # -- conversations -----------------------------------------------------------------

    def conversation(self, key: str) -> ConversationState:
        return self.state.conversations.setdefault(key, ConversationState())

    def _worker(self, key: str) -> ConversationWorker:
        worker = self._workers.get(key)
        if worker is None:
            assert self._tg is not None, "the bridge is not running"
            worker = ConversationWorker(self, Conversation.from_key(key))
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
            self.state.position = await self.deck.last_event_id()
            self.save()
        saved = self.state.position
        events = feed(self.deck, after=self.state.position)
        async with contextlib.aclosing(events):  # stopped mid-prompt: its stream closes now
            async for event in events:
                if event.type in _PROMPT_EVENTS:
                    # Posted (or refused for good) before the position passes it: a prompt
                    # waiting for the platform to answer again is not lost to a restart.
                    try:
                        await self._on_prompt_event(event.agent_id, event.type, event.data)
                    except Undeliverable:
                        pass  # said in its one log line
                    except AgentdeckError as exc:
                        logger.warning("could not show %s %d: %s", event.type, event.id, exc)
                    except Exception:  # a bug: the bridge serves on
                        logger.exception("prompt event %d failed", event.id)
                    self.state.position = event.id
                else:
                    self.state.position = event.id
                    if event.id - saved < POSITION_SAVE_EVERY:
                        continue  # other agents' chatter: the position is saved now and then
                self.save()
                saved = event.id

    async def _conversation_of(self, agent_id: str) -> str | None:
        """The conversation whose agent this is, or started it (however deep)."""
        if agent_id in self._roots:
            return self._roots[agent_id]
        try:
            parent = (await self.deck.get_agent(agent_id)).parent_id
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
                await self._close_prompt(shown, closed)
        elif kind == "question_answered":
            shown = self.state.prompts.pop(str(data["ask_id"]), None)
            if shown is not None:
                closed = fmt.answered_text(shown.text, data.get("answer"), data.get("by"))
                await self._close_prompt(shown, closed)

    async def _close_prompt(self, shown: OpenPrompt, text: str) -> None:
        where = Conversation.from_key(shown.conversation)
        await deliver(
            f"{self.platform.name}: closing a prompt in {shown.conversation}",
            lambda: self.platform.close_prompt(where, shown.message_id, text),
            self.config.retry,
        )

    async def _post_prompt(self, key: str, prompt: Prompt) -> None:
        # Room is left for the line that says who answered.
        room = max(self.platform.message_limit - PROMPT_ANSWER_ROOM, 32)
        if len(prompt.text) > room:
            prompt = Prompt(prompt.kind, prompt.request_id, prompt.text[: room - 1] + "…")
        where = Conversation.from_key(key)
        kind = "an approval" if prompt.kind is PromptKind.APPROVAL else "a question"
        message_id = await deliver(
            f"{self.platform.name}: {kind} prompt in {key}",
            lambda: self.platform.prompt(where, prompt),
            self.config.retry,
        )
        self.state.prompts[prompt.request_id] = OpenPrompt(
            conversation=key, message_id=message_id, kind=str(prompt.kind), text=prompt.text
        )

    async def _name(self, agent_id: str) -> str:
        try:
            return (await self.deck.get_agent(agent_id)).name
        except AgentdeckError:
            return agent_id
