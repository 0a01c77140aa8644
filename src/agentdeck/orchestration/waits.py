"""``wait_for_agents``: an orchestrator waits for its children.

It returns when all (or any) of the named children have finished their turn —
idle, or in a final state — with each one's final message, whether it ended in
error, and its cost; early when a child asks it a question or sends it a note;
at the caller's timeout with who is still running; or, when a single call would
outlast Claude Code's timeout for it, with a "still waiting" result the model
repeats. While it waits the orchestrator's state is ``awaiting_agents``.

Waiting is driven by the event log: every state change of a child wakes the
parent's waiter (``Orchestrator.wake``), which then reads the children's rows as
committed. Not their sessions' copies: a session takes its agent's new state a
step after the writer tells the loop, and the wake may run first (two children's
writes told to a busy loop at once): the second child read as running, its wake
spent, the wait would sleep through its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.asks import Ask
from agentdeck.orchestration import texts
from agentdeck.orchestration.host import Orchestration, ToolError
from agentdeck.orchestration.inbox import Inbox, call_cap


class WithInbox(Orchestration, Protocol):
    inbox: Inbox


MODES = ("all", "any")
MAX_WAIT_SECONDS = 24 * 3600.0


class Waits:
    def __init__(self, orchestrator: WithInbox) -> None:
        self.orch = orchestrator

    async def wait(
        self,
        parent_id: str,
        refs: list[str] | None = None,
        *,
        timeout: float = 600.0,
        mode: str = "all",
        cap: float | None = None,
    ) -> str:
        if mode not in MODES:
            raise ToolError(f"mode must be 'all' or 'any', not {mode!r}")
        orch = self.orch
        targets = (
            [await orch.child(parent_id, ref) for ref in dict.fromkeys(refs)]
            if refs
            else await orch.children(parent_id)
        )
        if not targets:
            raise ToolError("you have no child agents to wait for; start one with spawn_agent")
        ids = list(dict.fromkeys(a.id for a in targets))
        timeout = max(0.0, min(float(timeout), MAX_WAIT_SECONDS))
        cap = min(cap or float("inf"), call_cap(orch.settings.deck_tool_timeout_seconds))
        started = time.monotonic()
        deadline = started + min(timeout, cap)
        wake = orch.waiter(parent_id)
        session = orch.session(parent_id)
        if session is not None:
            await session.remember(waiting_for=[a.name for a in targets])
            await session.hold(AgentState.AWAITING_AGENTS)
        try:
            while True:
                wake.clear()
                agents = await self._committed(parent_id, ids)
                finished = [a for a in agents if not a.state.is_busy]
                running = [a for a in agents if a.state.is_busy]
                questions = await orch.inbox.new_questions(parent_id)
                notes = await orch.inbox.notes_for(parent_id)
                done = len(finished) == len(agents) if mode == "all" else bool(finished)
                now = time.monotonic()
                outcome = None
                if questions or notes:
                    outcome = "woken"
                elif done:
                    outcome = "done"
                elif now >= deadline:
                    outcome = "timeout" if now - started >= timeout else "still"
                if outcome is not None:
                    waited = now - started
                    return await self._report(
                        parent_id,
                        finished,
                        running,
                        questions,
                        notes,
                        outcome,
                        waited,
                        remaining=timeout - waited,
                    )
                # Children on other runner hosts change in another process's store:
                # looked at again every poll (this process's writes wake it at once).
                look = deadline - now
                if orch.runner.queueing:
                    look = min(look, orch.settings.runner_poll_seconds)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(look):
                        await wake.wait()
        finally:
            last = orch.unwait(parent_id, wake)
            if session is not None and last:  # another wait of the parent may go on
                await session.hold(AgentState.RUNNING)
                await session.remember(waiting_for=None)

    async def _committed(self, parent_id: str, ids: list[str]) -> list[Agent]:
        """The children's rows as the store has them (one read, after ``wake.clear``:
        a change committed later wakes the wait again)."""
        rows = {a.id: a for a in await self.orch.store.children([parent_id])}
        return [rows[i] if i in rows else await self.orch.agent(i) for i in ids]

    async def _report(
        self,
        parent_id: str,
        finished: list[Agent],
        running: list[Agent],
        questions: list[tuple[Ask, Agent]],
        notes: list[Ask],
        outcome: str,
        waited: float,
        *,
        remaining: float,
    ) -> str:
        inbox = self.orch.inbox
        asks = [ask for ask, _ in questions]
        inbox.mark_shown(parent_id, asks)
        question_lines = [texts.question_line(ask, texts.who(asker)) for ask, asker in questions]
        note_lines = await inbox.note_lines(notes)
        await inbox.asks.mark_delivered([n.id for n in notes])
        return texts.wait_text(
            finished=finished,
            running=running,
            questions=question_lines,
            notes=note_lines,
            outcome=outcome,
            waited=waited,
            remaining=remaining,
        )
