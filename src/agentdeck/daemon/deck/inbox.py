"""The Deck's inbox: permission requests (approvals) and workers' questions (asks)."""

from __future__ import annotations

from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.core.asks import Ask, AskState
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import UsageError

# Who answers when the caller names no one: the deck's own user at the command line
# (what the embedded CLI records). The web layer names the request's user.
LOCAL_ACTOR = "user:cli"
DECISIONS = ("allow", "deny")


class Inbox(DeckParts):
    async def approvals(
        self,
        *,
        states: list[ApprovalState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Approval]:
        """Requests in ``states`` (None: every state); ``agent_id`` names the agent as a
        ref does (``NotFound`` for none)."""
        approvals = self._runner.governor.approvals
        return await self._of_agent(
            agent_id,
            lambda a: approvals.list_approvals(states=states, agent_id=a, limit=limit),
        )

    async def approval(self, ref: str) -> Approval:
        return await self._runner.governor.approvals.find(ref)

    async def answer(
        self,
        ref: str,
        decision: str,
        *,
        by: str = LOCAL_ACTOR,
        message: str | None = None,
        remember: GrantScope | None = None,
    ) -> Approval:
        """Answer a request (``allow`` or ``deny``). If no agent waits for it any more
        (its process died and it was resumed, or is still stopped), the answer is
        reported to the agent: now if it runs here, else when it is next resumed."""
        if decision not in DECISIONS:
            raise UsageError(
                f"an answer is 'allow' or 'deny', not {decision!r}",
                hint="answer allow or deny; nothing was answered",
            )
        governor = self._runner.governor
        approval = await governor.approvals.find(ref)
        waited = governor.is_waiting(approval.id)
        answered = await governor.answer(
            approval.id, decision, by=by, message=message, remember=remember
        )
        if not waited and not await self._waited_elsewhere(answered):
            await self._report(answered)
        return answered

    async def _waited_elsewhere(self, approval: Approval) -> bool:
        """Whether another process (an ``agentdeck run`` beside an embedded deck)
        supervises the agent: it reads the answer from the store, nothing to report."""
        from agentdeck.runner.steering import owned_elsewhere

        return owned_elsewhere(await self._store.get_agent(approval.agent_id))

    async def _report(self, approval: Approval) -> None:
        verb = "approved" if approval.state.allows else "denied"
        note = (
            f"While you were stopped, your earlier request to use {approval.tool} "
            f"({approval.input}) was {verb}"
            + (f": {approval.message}" if approval.message else ".")
            + (" You may try it again." if approval.state.allows else "")
        )
        session = self._runner.live(approval.agent_id)
        if session is not None:
            await session.send(note)
            return
        await self._store.amend_extra(approval.agent_id, append={"reports": note})

    async def sweep(self) -> None:
        """Deny orphaned requests at their deadline; expire unanswered questions."""
        await self._runner.governor.expire_orphans()
        await self._orchestration.inbox.expire_orphans()

    async def asks(
        self,
        *,
        states: list[AskState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[Ask]:
        """Questions in ``states`` (None: every state, as the interface says);
        ``agent_id`` names the asker as a ref does (``NotFound`` for none)."""
        inbox = self._orchestration.inbox
        wanted = states or list(AskState)
        return await self._of_agent(
            agent_id, lambda a: inbox.list_questions(states=wanted, agent_id=a, limit=limit)
        )

    async def asks_to(self, agent_id: str, *, limit: int = 50) -> list[Ask]:
        """Open questions workers put to ``agent_id`` (newest first)."""
        return await self._orchestration.inbox.asks.list_asks(to_agent_id=agent_id, limit=limit)

    async def ask(self, ref: str) -> Ask:
        return await self._orchestration.inbox.asks.find(ref)

    async def answer_ask(self, ref: str, answer: str, *, by: str = LOCAL_ACTOR) -> Ask:
        """A person answers a worker's question (whoever it was put to)."""
        if not answer:
            raise UsageError("an answer needs text", hint="write what the worker should go on with")
        return await self._orchestration.inbox.answer(ref, answer, by=by)
