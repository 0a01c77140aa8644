"""A runner stopping: starts refused, sessions told to stop, what is left settled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable

from agentdeck.core.agent import AgentState
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.errors import Fenced
from agentdeck.runner import procs
from agentdeck.runner.runner_base import RunnerBase
from agentdeck.runner.session import ABORT_GRACE_SECONDS, AgentSession, stopped_start

logger = logging.getLogger(__name__)


# Agents whose turn waits on the deck itself (an answer, their workers, an approval):
# a graceful close would wait for nothing but its timeout.
WAITING_IN_A_TOOL = frozenset(
    {AgentState.AWAITING_INPUT, AgentState.AWAITING_AGENTS, AgentState.AWAITING_PERMISSION}
)


class RunnerShutdown(RunnerBase):
    """Stops a runner's agents: gracefully, now, or as the daemon stops."""

    async def refuse_starts(self, *, suspend: bool = False) -> None:
        """From now on no agent starts (``ShuttingDown``), every session is told it
        stops, and those starting stop now: the daemon is stopping (``suspend`` as
        for ``shutdown``, which then waits for the stops begun here)."""
        self._closing = True
        self._suspending = self._suspending or suspend
        self._begin_stops(suspend=self._suspending)
        await asyncio.gather(self.abort_starts(suspend=suspend), self.warm.close())

    async def stop_now(self, reason: str) -> None:
        """Everything this runner runs stops now, with no grace for a turn to end:
        the process supervising it was told to end (SIGTERM, SIGHUP to an embedded
        run). No agent starts from now on; a start under way stops; every session's
        whole process tree (its sandbox included) gets SIGTERM, then SIGKILL after
        ``stop_grace_seconds``, as a kill does; each agent is left ``interrupted``
        with ``reason`` as its last error (an agent whose turn had ended keeps what
        that turn made it). A session whose graceful close had begun is halted too.
        Returns once every session has its final state; ``shutdown`` closes the rest."""
        self._closing = True
        halts = []
        for agent_id, session in self.sessions.items():
            if not session.finished.is_set():
                halts.append(halt := asyncio.ensure_future(session.halt(reason=reason)))
                self._stops.setdefault(agent_id, halt)  # what ``shutdown`` waits for
        outcomes = await asyncio.gather(
            self.abort_starts(), self.warm.close(), *halts, return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                logger.warning("a stop did not go as it should: %r", outcome)

    def _begin_stops(self, *, suspend: bool) -> None:
        """Each session not told yet is told it stops (the stop's first step runs
        before anything this caller does next: an orchestrator must not hear of a
        child's stop as the child's end)."""

        def stop(session: AgentSession) -> Awaitable[None]:
            agent = session.agent
            if suspend and agent.spec.resume_on_restart and agent.state.is_busy:
                return session.suspend()
            if agent.state in WAITING_IN_A_TOOL:  # its turn cannot end by itself
                return session.halt()
            return session.close()

        for agent_id, session in self.sessions.items():
            if agent_id not in self._stops:
                self._stops[agent_id] = asyncio.ensure_future(stop(session))

    async def abort_starts(self, *, suspend: bool = False) -> None:
        """Stop the Claude Code processes of the agents still starting (a stop is
        asked for: their starts fail at once, and are marked interrupted; with
        ``suspend``, those that resume on restart are started again then)."""
        starting = [s for s in self.sessions.values() if s.starting]
        # Every start told at once, the processes booting stopped together (one
        # grace for all, not a thread and a grace each).
        booting = [pid for s in starting if (pid := s.stop_starting(suspend=suspend))]
        if booting:
            await asyncio.to_thread(procs.terminate_trees, booting, ABORT_GRACE_SECONDS)
        await asyncio.gather(*(s.abort_start(suspend=suspend) for s in starting))

    async def shutdown(self, *, suspend: bool = False) -> None:
        """Close every session (gracefully, then by force) and the scripted models.

        With ``suspend`` (the daemon stopping), an agent mid-turn that is to be
        resumed on restart is stopped at once and marked to be carried on. Agents
        being created meanwhile are refused, or stopped at their next step, and
        waited for: it returns once every agent has its final state."""
        self._closing = True  # before anything awaits: no session is added unseen
        self._suspending = self._suspending or suspend
        await self.warm.close()
        await self.merges.close()  # what was mid-merge is taken again at the next start
        if self._commands is not None:
            self._commands.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._commands
        starting = set(self._launching)
        # Every session is told it is stopping (unless refuse_starts did), then the
        # starts still under way are stopped at once, not waited for.
        self._begin_stops(suspend=self._suspending)
        sessions = list(self.sessions.values())
        stopping = [self._stops[s.agent.id] for s in sessions]
        await self.abort_starts(suspend=suspend)
        for task in starting:
            task.cancel()  # start() stops what it began and marks it interrupted
        results = await asyncio.gather(*stopping, return_exceptions=True)
        if starting:
            await asyncio.wait(starting, timeout=self.settings.stop_grace_seconds * 3)
        await self._creations_ended()
        for session, outcome in zip(sessions, results, strict=True):
            if isinstance(outcome, BaseException):
                logger.warning("agent %s did not stop gracefully: %r", session.agent.id, outcome)
                try:
                    await session.kill()
                except Exception:
                    logger.exception("agent %s could not be killed either", session.agent.id)
        await self.models.close()
        if self._recorder is not None:  # the cassettes of agents still open, cut short
            await self._recorder.close()

    async def _creations_ended(self) -> None:
        """Creations under way end at their next step (refused, or their start
        stopped); a session one of them added after the stop began is stopped too."""
        try:
            async with asyncio.timeout(self.settings.stop_grace_seconds * 3):
                await self._no_creation.wait()
        except TimeoutError:
            logger.warning("%d agent creation(s) did not end in time", self._creations)
        late = [s for s in self.sessions.values() if not s.finished.is_set()]
        await asyncio.gather(*(s.kill() for s in late), return_exceptions=True)
        await self._settle_unfinished()

    async def _settle_unfinished(self) -> None:
        """What the store still has as live under this process once every stop is
        over: a creation that did not end in time (a slow start on a loaded host) or
        a process that would not die. It is marked as a start stopped is
        (``interrupted``, to be carried on when suspended), never left ``starting``
        with nobody to supervise it."""
        live = [state for state in AgentState if state.is_live]
        found = await self.store.list_agents(states=live, limit=100_000, include_archived=True)
        now = time.time()
        for agent in found:
            if agent.owner_pid != os.getpid():
                continue
            grace = ABORT_GRACE_SECONDS
            await asyncio.to_thread(
                procs.end_leftover,
                agent.pid,
                agent.updated_at,
                grace,
                procs.carried_id(agent.id, agent.extra),
            )
            extra, reason = stopped_start(agent.extra, suspended=self._suspending)
            logger.warning("agent %s was still %s when the runner stopped", agent.id, agent.state)
            moved = transition(agent, AgentState.INTERRUPTED, ts=now, reason=reason)
            if moved.refused:
                logger.warning(REFUSALS.note(agent, AgentState.INTERRUPTED))
            try:
                await self.store.record(
                    list(moved.events),
                    moved.agent.with_changes(pid=None, current_tool=None, updated_at=now,
                                             last_error=reason, extra=extra),
                )  # fmt: skip
            except Fenced as exc:  # a runner host's lease lost: its holder says what became of it
                logger.warning("agent %s left as it is: %s", agent.id, exc.message)
