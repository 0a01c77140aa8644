"""Questions and notes between workers, their orchestrator and people.

- ``ask``: a worker's question blocks it (``awaiting_input``) until its parent
  answers (``answer_request``), a person answers (dashboard, CLI, API), or the
  deadline passes. Its parent learns of it at once if it waits in
  ``wait_for_agents``, with a follow-up message if it is idle, otherwise at its
  next wait or when its turn ends. An answer that comes while the worker no
  longer waits is told to it as a message (now, or when it is resumed).
- ``notify_parent``: a note the parent gets with its next turn, or that wakes
  it from ``wait_for_agents``.
- ``message``: a follow-up to a sibling.

Rows live in the store (``asks``), so a pending question survives a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.ask_choices import ChoiceError, normalized
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.events import QuestionAnswered, QuestionAsked
from agentdeck.core.tree import resolve_ref
from agentdeck.errors import InvalidState, NotFound, UsageError
from agentdeck.orchestration import texts
from agentdeck.orchestration.host import Orchestration, ToolError
from agentdeck.runner.steering import owned_elsewhere
from agentdeck.store.asks import AskStore

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.25
MAX_QUESTION_CHARS = 20_000
MAX_ASK_SECONDS = 7 * 24 * 3600
ANSWER_HINT = "an option's number or label, or your own words; several questions: 1=…;2=…"


def call_cap(timeout_setting: float) -> float:
    """How long one blocking deck tool call may wait: a margin below Claude
    Code's timeout for the call, so the tool answers before it is cut off."""
    margin = min(60.0, max(1.0, timeout_setting * 0.1))
    return max(1.0, timeout_setting - margin)


class Inbox:
    def __init__(self, orchestrator: Orchestration) -> None:
        self.orch = orchestrator
        self.asks = AskStore(orchestrator.store)
        self._waiters: dict[str, asyncio.Future[Ask]] = {}
        self._shown: dict[str, set[str]] = {}  # parent id -> questions it was told
        self._delivering: set[str] = set()
        self._idle_locks: dict[str, asyncio.Lock] = {}

    # -- a worker asks ---------------------------------------------------------------

    async def ask(
        self,
        agent_id: str,
        question: str,
        *,
        timeout: float = 1800.0,
        request_id: str | None = None,
    ) -> str:
        session = self.orch.session(agent_id)
        if session is None:
            raise ToolError("only a running agent can ask")
        agent = session.agent
        loop = asyncio.get_running_loop()
        if request_id:
            ask = await self._own(agent, request_id)
            if ask.state != AskState.PENDING:
                if not await self.asks.claim_delivery(ask.id):
                    return f"Your question {ask.id} was already answered, and you were told."
                if ask.state == AskState.ANSWERED:
                    return texts.answered_text(ask, await self._by(ask))
                return texts.expired_text(ask, ask.expires_at - ask.created_at)
            future: asyncio.Future[Ask] = loop.create_future()
            self._waiters[ask.id] = future
            await session.hold(AgentState.AWAITING_INPUT)
        else:
            if not question.strip():
                raise ToolError("ask_orchestrator needs a question")
            if len(question) > MAX_QUESTION_CHARS:
                raise ToolError(f"the question is longer than {MAX_QUESTION_CHARS:,} characters")
            # Waited for before anyone can see it: an answer can never come first.
            ask_id = "ak" + secrets.token_hex(6)
            future = loop.create_future()
            self._waiters[ask_id] = future
            # Waiting before anyone can see it: the board never shows a question
            # whose asker still looks busy.
            await session.hold(AgentState.AWAITING_INPUT)
            try:
                ask = await self._open(
                    agent, ask_id, question, max(1.0, min(timeout, MAX_ASK_SECONDS))
                )
            except BaseException:
                self._waiters.pop(ask_id, None)
                await session.hold(AgentState.RUNNING)
                raise
        cap = call_cap(self.orch.settings.deck_tool_timeout_seconds)
        started = time.monotonic()
        try:
            await session.remember(asking=ask.id)
            outcome = await self._await(ask, future, deadline=time.time() + cap)
            # Claimed before the waiter goes: nobody else tells it again.
            told_here = outcome is not None and await self.asks.claim_delivery(outcome.id)
        finally:
            self._waiters.pop(ask.id, None)
            await session.hold(AgentState.RUNNING)
        waited = time.monotonic() - started
        if outcome is None:
            return texts.still_asking_text(ask, waited)
        await session.remember(asking=None)
        if not told_here:
            return f"The answer to your question {ask.id} was already given to you."
        if outcome.state == AskState.ANSWERED:
            return texts.answered_text(outcome, await self._by(outcome))
        return texts.expired_text(outcome, outcome.expires_at - outcome.created_at)

    async def _own(self, agent: Agent, ref: str) -> Ask:
        try:
            ask = await self.asks.find(ref)
        except NotFound:
            raise ToolError(f"there is no question {ref!r}") from None
        if ask.agent_id != agent.id or ask.kind != AskKind.QUESTION:
            raise ToolError(f"question {ref!r} is not one of yours")
        return ask

    async def _open(self, agent: Agent, ask_id: str, question: str, timeout: float) -> Ask:
        parent = None
        if agent.parent_id:
            with contextlib.suppress(NotFound):
                parent = await self.orch.agent(agent.parent_id)
        to = parent.id if parent is not None and parent.state.is_live else None
        now = time.time()
        ask = await self.asks.create(
            Ask(
                id=ask_id,
                kind=AskKind.QUESTION,
                agent_id=agent.id,
                to_agent_id=to,
                text=question,
                state=AskState.PENDING,
                created_at=now,
                expires_at=now + timeout,
            )
        )
        await self.orch.store.append(
            [
                QuestionAsked(
                    agent_id=agent.id,
                    ts=now,
                    ask_id=ask.id,
                    question=question,
                    to_agent_id=to,
                    expires_at=ask.expires_at,
                )
            ]
        )
        if to is not None:
            self.orch.wake(to)
            parent_session = self.orch.session(to)
            if parent_session is not None and parent_session.agent.state == AgentState.IDLE:
                await self.on_idle(to)
        return ask

    async def _await(self, ask: Ask, future: asyncio.Future[Ask], *, deadline: float) -> Ask | None:
        """The answered (or expired) question, or None at ``deadline`` (one
        call's cap) while it is still open. Answers from this process come
        through the future, from another one through the row."""
        while True:
            now = time.time()
            if now >= ask.expires_at:
                expired = await self.asks.decide(ask.id, AskState.EXPIRED, by="timeout")
                done = expired or await self.asks.get(ask.id)
                if expired is not None:
                    await self._record_answer(done)
                return done
            if now >= deadline:
                return None
            wait = min(POLL_SECONDS, ask.expires_at - now, deadline - now)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    return await asyncio.shield(future)
            current = await self.asks.get(ask.id)
            if not current.state.is_open:
                return current

    async def _by(self, ask: Ask) -> str:
        by = ask.answered_by or "?"
        if by.startswith("agent:"):
            with contextlib.suppress(NotFound):
                return f"your orchestrator {(await self.orch.agent(by[6:])).name}"
        return by.removeprefix("user:") + " (a person)" if by.startswith("user:") else by

    # -- answering -------------------------------------------------------------------------

    async def answer(self, ref: str, answer: str, *, by: str, caller: Agent | None = None) -> Ask:
        """Answer a pending question. ``caller``: the orchestrator answering
        through ``answer_request`` (it may name the asking child instead of the
        request id, and may answer only questions put to it)."""
        if not answer.strip():  # the model's mistake, or a person's
            raise (ToolError if caller else UsageError)("the answer is empty")
        ask = await self._resolve(ref, caller)
        if ask.kind != AskKind.QUESTION:
            raise ToolError(f"{ask.id} is a note, not a question: there is nothing to answer")
        if caller is not None and ask.to_agent_id != caller.id:
            raise ToolError(f"question {ask.id} was not put to you")
        if ask.questions:  # a multiple choice: checked, and kept in one form
            try:
                answer = normalized(ask.questions, answer)
            except ChoiceError as exc:
                raise UsageError(f"{exc}; nothing was answered", hint=ANSWER_HINT) from None
        decided = await self.asks.decide(ask.id, AskState.ANSWERED, by=by, answer=answer)
        if decided is None:
            current = await self.asks.get(ask.id)
            raise InvalidState(ask.id, str(current.state), "answer it again", noun="question")
        await self._record_answer(decided)
        future = self._waiters.get(decided.id)
        if future is not None and not future.done():
            future.set_result(decided)
        else:
            await self._late(decided)
        return decided

    async def _resolve(self, ref: str, caller: Agent | None) -> Ask:
        try:
            return await self.asks.find(ref)
        except NotFound:
            if caller is None:
                raise
        children = await self.orch.children(caller.id)
        child = resolve_ref(ref, children)
        if child is None:
            raise ToolError(f"there is no question {ref!r}, nor a child of yours by that name")
        pending = await self.asks.list_asks(agent_ids=[child.id], to_agent_id=caller.id)
        if not pending:
            raise ToolError(f"{child.name} has no question waiting for you")
        return pending[-1]  # the oldest open one

    async def _record_answer(self, ask: Ask) -> None:
        await self.orch.store.append(
            [
                QuestionAnswered(
                    agent_id=ask.agent_id,
                    ts=time.time(),
                    ask_id=ask.id,
                    answer=ask.answer,
                    by=ask.answered_by or "timeout",
                )
            ]
        )

    async def _late(self, ask: Ask) -> None:
        """Nobody in this process waits for the answer: tell the worker as a
        message now, or when it is resumed. A worker supervised by another
        process polls its row and takes the answer itself."""
        if ask.id in self._delivering:
            return
        self._delivering.add(ask.id)
        try:
            await self._tell(ask)
        finally:
            self._delivering.discard(ask.id)

    async def _tell(self, ask: Ask) -> None:
        try:
            asker = await self.orch.agent(ask.agent_id)
        except NotFound:
            return
        if owned_elsewhere(asker):
            return
        if not await self.asks.claim_delivery(ask.id):
            return  # told already (the courier, or the call that waited for it)
        if ask.state == AskState.ANSWERED:
            note = texts.late_answer_text(ask, await self._by(ask))
        else:
            note = texts.expired_text(ask, ask.expires_at - ask.created_at)
        session = self.orch.session(asker.id)
        if session is not None:
            await session.remember(asking=None)
            try:
                await session.send(note)
                return
            except InvalidState:
                pass  # it is stopping: told when it is resumed
        # Said first when it is resumed; the rest of its row stays as it is.
        await self.orch.store.amend_extra(asker.id, set_={"asking": None}, append={"reports": note})

    async def deliver_late(self) -> None:
        """Answered (or expired) questions of agents live here that no call waits
        for and that were not delivered: tell them now."""
        live = [agent_id for agent_id in self.orch.runner.sessions if self.orch.session(agent_id)]
        if not live:
            return
        done = await self.asks.list_asks(
            states=[AskState.ANSWERED, AskState.EXPIRED], agent_ids=live, undelivered=True
        )
        for ask in done:
            if ask.id not in self._waiters:
                await self._late(ask)

    async def expire_orphans(self) -> list[Ask]:
        """Questions past their deadline that nobody waits for: expired, and the
        worker told when it can be."""
        now = time.time()
        expired = []
        for ask in await self.asks.list_asks(limit=1000):
            if ask.expires_at <= now and ask.id not in self._waiters:
                done = await self.asks.decide(ask.id, AskState.EXPIRED, by="timeout")
                if done is not None:
                    await self._record_answer(done)
                    await self._late(done)
                    expired.append(done)
        return expired

    # -- notes and messages ------------------------------------------------------------------

    async def notify_parent(self, agent_id: str, text: str) -> str:
        agent = await self.orch.agent(agent_id)
        if not agent.parent_id:
            raise ToolError("you have no orchestrator to notify (you were not spawned by one)")
        if not text.strip():
            raise ToolError("notify_parent needs a text")
        parent = await self.orch.agent(agent.parent_id)
        now = time.time()
        await self.asks.create(
            Ask(
                id="nt" + secrets.token_hex(6),
                kind=AskKind.NOTE,
                agent_id=agent.id,
                to_agent_id=parent.id,
                text=text[:MAX_QUESTION_CHARS],
                state=AskState.PENDING,
                created_at=now,
                expires_at=now,
            )
        )
        self.orch.wake(parent.id)
        return f"Noted for {parent.name}: it gets this with its next turn (or at once if it waits)."

    async def notes_for(self, agent_id: str) -> list[Ask]:
        notes = await self.asks.list_asks(
            kind=AskKind.NOTE, to_agent_id=agent_id, undelivered=True, limit=100
        )
        notes.reverse()  # oldest first
        return notes

    async def note_lines(self, notes: list[Ask]) -> list[str]:
        names: dict[str, str] = {}
        for note in notes:
            if note.agent_id not in names:
                try:
                    names[note.agent_id] = (await self.orch.agent(note.agent_id)).name
                except NotFound:
                    names[note.agent_id] = note.agent_id
        return [texts.note_line(n, names[n.agent_id]) for n in notes]

    async def with_notes(self, agent: Agent, text: str) -> str:
        notes = await self.notes_for(agent.id)
        if not notes:
            return text
        await self.asks.mark_delivered([n.id for n in notes])
        return f"{texts.notes_preamble(await self.note_lines(notes))}\n\n{text}"

    async def message(self, agent_id: str, ref: str, text: str) -> str:
        agent = await self.orch.agent(agent_id)
        if not agent.parent_id:
            raise ToolError("you have no siblings: you were not spawned by an orchestrator")
        siblings = [a for a in await self.orch.children(agent.parent_id) if a.id != agent.id]
        target = resolve_ref(ref, siblings)
        if target is None:
            names = ", ".join(a.name for a in siblings) or "none"
            raise ToolError(f"you have no sibling {ref!r} (your siblings: {names})")
        if not text.strip():
            raise ToolError("message_agent needs a text")
        delivered = await self.orch.deliver(target, f"Message from {agent.name}:\n{text}")
        return f"Sent to {target.name} ({delivered.state}); it reads it with its next turn."

    # -- the parent's side --------------------------------------------------------------------

    async def new_questions(self, parent_id: str) -> list[tuple[Ask, Agent]]:
        """Open questions put to ``parent_id`` that it was not told yet."""
        found = await self.asks.list_asks(to_agent_id=parent_id, limit=100)
        # Remembered only while they are open: the set stays small.
        shown = self._shown[parent_id] = self._shown.get(parent_id, set()) & {a.id for a in found}
        out = []
        for ask in reversed(found):
            if ask.id in shown:
                continue
            try:
                out.append((ask, await self.orch.agent(ask.agent_id)))
            except NotFound:
                continue
        return out

    def mark_shown(self, parent_id: str, asks: list[Ask]) -> None:
        self._shown.setdefault(parent_id, set()).update(a.id for a in asks)

    async def on_idle(self, agent_id: str) -> None:
        """``agent_id`` finished its turn: questions put to it that it was not
        told are sent as its next message (its workers wait); an orphaned child
        is closed."""
        session = self.orch.session(agent_id)
        if session is None:
            return
        if await self.orch.close_if_orphaned(session.agent):
            return
        lock = self._idle_locks.setdefault(agent_id, asyncio.Lock())
        async with lock:  # two calls at once must not tell it the same question twice
            pending = await self.new_questions(agent_id)
            if not pending:
                return
            self.mark_shown(agent_id, [a for a, _ in pending])
            text = "\n\n".join(texts.question_for_parent(ask, asker) for ask, asker in pending)
            try:
                await session.send(text)
            except InvalidState:
                logger.info("could not tell %s of its workers' questions", agent_id)

    async def list_questions(
        self, *, states: list[AskState] | None = None, agent_id: str | None = None, limit: int = 100
    ) -> list[Ask]:
        return await self.asks.list_asks(
            states=states or [AskState.PENDING],
            agent_ids=[agent_id] if agent_id else None,
            limit=limit,
        )
