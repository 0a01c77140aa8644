"""Steering a session: follow-ups, waits, interrupt, kill, halt, graceful close.

A stop asked for while the session still starts stops the start instead
(``abort_start``): it never runs, and ends ``interrupted`` (``killed`` by a kill).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import AgentState
from agentdeck.core.events import Notice, UserMessageSent
from agentdeck.errors import InvalidState
from agentdeck.runner import procs, sdk_private
from agentdeck.runner.session_state import ABORT_GRACE_SECONDS
from agentdeck.runner.session_stream import SessionStream

if TYPE_CHECKING:
    from claude_agent_sdk import ResultMessage

logger = logging.getLogger(__name__)


class SessionSteering(SessionStream):
    """What others ask of a running (or starting) session."""

    def refuse_start(self, *, suspend: bool = False) -> None:
        """Its start, whenever it comes, stops at its first step (the daemon is
        stopping); ``suspend`` as for ``abort_start``."""
        if suspend and self.agent.spec.resume_on_restart:
            self._suspended = True
        self._aborted = True

    def stop_starting(self, *, suspend: bool = False) -> int | None:
        """``abort_start``'s first step, for many sessions at once: the start is
        told to stop; the pid of its process booting, if it has one, is returned
        for the caller to stop (0: no process yet; None: not starting)."""
        if not self.starting:
            return None
        self.refuse_start(suspend=suspend)
        if self._waiting_slot is not None:
            self._waiting_slot.cancel()  # waiting for its turn to boot: no longer
        return sdk_private.pid_of(self._connecting) or 0

    async def abort_start(self, *, suspend: bool = False) -> None:
        """A start under way stops now, at whatever step it is: before its process
        exists it goes no further; a process still connecting is stopped (its
        connect, and the SDK's clean-up that waits for it, end at once instead of at
        a timeout). It ends ``interrupted`` (``killed`` by a kill). With ``suspend``
        (the daemon stopping), an agent that resumes on restart is marked to be
        started again then."""
        if self.stop_starting(suspend=suspend) is None:
            return
        while self.starting:
            pid = sdk_private.pid_of(self._connecting)
            if pid is not None:
                # Nothing to save yet: no grace beyond a moment to exit on SIGTERM.
                await asyncio.to_thread(procs.terminate_tree, pid, ABORT_GRACE_SECONDS)
                return
            if self._connecting is None:
                return  # not connecting: its next step sees the stop
            await asyncio.sleep(0.02)  # its process is being spawned: a moment

    async def _stop_start(self, state: AgentState, *, suspend: bool = False) -> bool:
        """When it is still starting, the start is stopped (not waited for) and
        ``state`` recorded (``killed``, else ``interrupted``: it never ran; with
        ``suspend``, marked to be started again as for ``abort_start``). True when
        it was starting."""
        if not self.starting:
            return False
        self._stopping = state
        await self.abort_start(suspend=suspend)
        try:
            await self._await_exit(self.settings.stop_grace_seconds * 3)
        except TimeoutError:
            logger.warning("agent %s: its start did not stop in time", self.agent.id)
        return True

    async def send(self, text: str) -> None:
        """A user message; queued by the CLI if a turn is running, and by the
        session while it starts (it follows the first prompt)."""
        if self._client is None and not self._started.is_set():
            async with asyncio.timeout(self.settings.connect_timeout_seconds + 30):
                await self._started.wait()
        if self._client is None or self.finished.is_set() or self._stopping:
            raise InvalidState(self.agent.id, self.agent.state, "send a message")
        if self.extension is not None:
            text = await self.extension.before_send(self.agent, text)
        await self._commit(
            [UserMessageSent(agent_id=self.agent.id, ts=time.time(), text=text)],
            state=AgentState.RUNNING,
        )
        await self._client.query(text)

    async def hold(self, state: AgentState) -> None:
        """The agent waits (``awaiting_input``, ``awaiting_agents``) or runs again
        (``running``) inside a tool call; the board shows it. A session past its
        turn keeps its state."""
        if self.finished.is_set() or self._stopping:
            return
        current = self.agent.state
        if state == AgentState.RUNNING and current not in (
            AgentState.AWAITING_INPUT,
            AgentState.AWAITING_AGENTS,
        ):
            return
        if not current.is_busy:
            return
        await self._commit([], state=state)

    async def remember(self, **extra: Any) -> None:
        """Keep something on the agent's row (its ``extra``); a ``None`` value
        removes the key. Through the session, which owns the row while it runs;
        a session being stopped keeps what it has (a restart reads it)."""
        if self._stopping is not None or self.finished.is_set():
            return
        merged = {k: v for k, v in {**self.agent.extra, **extra}.items() if v is not None}
        await self._commit([], extra=merged)

    async def interrupt(self) -> None:
        if await self._stop_start(AgentState.INTERRUPTED):
            return  # still starting: it stops there, interrupted
        if self._client is None or self.finished.is_set():
            raise InvalidState(self.agent.id, self.agent.state, "interrupt")
        await self._commit(
            [
                Notice(
                    agent_id=self.agent.id,
                    ts=time.time(),
                    kind="interrupt",
                    message="interrupt requested",
                )
            ]
        )
        async with asyncio.timeout(10):
            await self._client.interrupt()

    async def kill(self) -> None:
        """Stop the CLI and every process it started, now."""
        if self.finished.is_set() or await self._stop_start(AgentState.KILLED):
            return
        self._stopping = AgentState.KILLED
        self._terminating = True
        pid = self.pid
        if pid is not None:
            await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)
        await self._ended_after_stop()

    async def suspend(self) -> None:
        """The daemon stops while the agent is mid-turn: stop its processes now and
        leave it ``interrupted``, marked to be carried on when the daemon starts again."""
        await self.halt(carry_on=True)

    async def halt(self, *, carry_on: bool = False, reason: str | None = None) -> None:
        """Stop its processes now, mid-turn, and leave it ``interrupted`` (with
        ``carry_on``, marked to be carried on when the daemon starts again; with
        ``reason``, that is its last error). For a daemon stopping while the agent
        waits in a tool call (an answer, its workers): its turn cannot end by
        itself, so a graceful close would only wait for the timeout; and for a
        supervisor told to end (``Runner.stop_now``)."""
        if self.finished.is_set() or await self._stop_start(
            AgentState.INTERRUPTED, suspend=carry_on
        ):
            return
        self._stop_reason = reason
        self._suspended = carry_on
        self._stopping = AgentState.INTERRUPTED
        self._terminating = True
        pid = self.pid
        if pid is not None:
            await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)
        await self._ended_after_stop()

    async def close(self) -> None:
        """Graceful stop: close stdin, let the CLI finish, escalate if it does not."""
        if self.finished.is_set() or await self._stop_start(AgentState.INTERRUPTED):
            return
        self._stopping = self._final or AgentState.DONE
        await self._end_input()
        try:
            await self._await_exit(self._exit_deadline(2))
        except TimeoutError:
            self._terminating = True
            pid = self.pid
            if pid is not None:
                await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)
            await self._ended_after_stop()

    async def next_result(self, timeout: float | None = None) -> ResultMessage | None:
        """The next turn's result, or None if the process ended first."""
        getter = asyncio.ensure_future(self._results.get())
        ended = asyncio.ensure_future(self.finished.wait())
        try:
            done, _ = await asyncio.wait(
                {getter, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            ended.cancel()
            if not getter.done():
                getter.cancel()
        if getter in done:
            return getter.result()
        if not self._results.empty():
            return self._results.get_nowait()
        if not done:
            raise TimeoutError("no result before the deadline")
        return None

    async def wait_finished(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self.finished.wait()
