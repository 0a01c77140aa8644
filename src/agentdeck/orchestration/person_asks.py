"""A worker's multiple-choice questions to a person (Claude Code's
``AskUserQuestion``), as one ask in the Asks inbox.

Unlike ``ask_orchestrator`` the question is put to a person, never to the
worker's orchestrator, and the worker waits inside Claude Code's permission
callback, not a deck tool call: no call cap, just the ask's deadline (the asks'
own default, ``ASK_USER_SECONDS``), after which it expires and the worker is
told to go on. The answer reaches it as the tool's answer; it is claimed as
delivered, so nobody tells it again as a message. If the worker goes away first
the ask is cancelled.
"""

from __future__ import annotations

import asyncio
import secrets
import time

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.ask_choices import ChoiceQuestion, rendered
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.events import QuestionAsked
from agentdeck.orchestration.host import ToolError
from agentdeck.orchestration.inbox import Inbox

ASK_USER_SECONDS = 1800.0  # as ask_orchestrator's default timeout
GONE_BY = "agentdeck"


async def ask_person(
    inbox: Inbox,
    agent: Agent,
    questions: tuple[ChoiceQuestion, ...],
    *,
    timeout: float | None = None,
) -> Ask:
    """The question once answered, expired or cancelled (unanswered, at
    ``timeout``: by default ``ASK_USER_SECONDS``, read when it is asked)."""
    timeout = ASK_USER_SECONDS if timeout is None else timeout
    session = inbox.orch.session(agent.id)
    if session is None:
        raise ToolError("only a running agent can ask")
    loop = asyncio.get_running_loop()
    ask_id = "ak" + secrets.token_hex(6)
    future: asyncio.Future[Ask] = loop.create_future()
    inbox._waiters[ask_id] = future  # before anyone can see it: no answer comes first
    await session.hold(AgentState.AWAITING_INPUT)
    try:
        now = time.time()
        ask = await inbox.asks.create(
            Ask(
                id=ask_id,
                kind=AskKind.QUESTION,
                agent_id=agent.id,
                to_agent_id=None,
                text=rendered(questions),
                state=AskState.PENDING,
                created_at=now,
                expires_at=now + timeout,
                questions=questions,
            )
        )
        event = QuestionAsked(
            agent_id=agent.id,
            ts=now,
            ask_id=ask.id,
            question=ask.text,
            to_agent_id=None,
            expires_at=ask.expires_at,
        )
        await inbox.orch.store.append([event])
        try:
            done = await inbox._await(ask, future, deadline=ask.expires_at + 1.0)
        except asyncio.CancelledError:
            await asyncio.shield(_cancel(inbox, ask.id))
            raise
        if done is None:  # not reached: the deadline is past the ask's own
            done = await inbox.asks.get(ask.id)
        await inbox.asks.claim_delivery(done.id)  # told as the tool's answer
        return done
    finally:
        inbox._waiters.pop(ask_id, None)
        await session.hold(AgentState.RUNNING)


async def _cancel(inbox: Inbox, ask_id: str) -> None:
    cancelled = await inbox.asks.decide(ask_id, AskState.CANCELLED, by=GONE_BY)
    if cancelled is not None:
        await inbox._record_answer(cancelled)
        await inbox.asks.claim_delivery(cancelled.id)
