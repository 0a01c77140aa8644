"""How a session ends: its guardrails trip, its process exits, it is cleaned up.

Whatever ended it (a result in one-shot mode, a kill, a crash, a budget), the
end is recorded once, as essential, after what the agent left running, its
sandbox and its worktree's objects are dealt with (``SessionExit._end``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from agentdeck.core.agent import AgentState
from agentdeck.core.events import ErrorOccurred, Event, Notice
from agentdeck.core.guardrails import Guard, Limits, SharedBudget, Stop
from agentdeck.core.worktree import Worktree
from agentdeck.errors import StoreError, WorktreeError
from agentdeck.runner import procs, sdk_private
from agentdeck.runner.session_state import READER_GRACE_SECONDS, SUSPENDED, SessionState
from agentdeck.worktrees.objects import take_in

logger = logging.getLogger(__name__)


class SessionExit(SessionState):
    """The end of a session: guardrails, exit, clean-up and its record."""

    async def _ended_after_stop(self) -> None:
        """Its processes were told to stop; the reader records the end. When the SDK
        does not see the process go (its reader waits on a tool call of ours, a
        worker's question say), the reader is ended here after a grace, so that the
        end is recorded now, while the store is open, not at the loop's close."""
        pid = self.spawned_pid
        gone = pid is not None and not procs.is_running(pid)
        try:  # its process is gone: the reader sees it at once, or never
            await self._await_exit(READER_GRACE_SECONDS if gone else self._exit_deadline(1))
        except TimeoutError:
            if self._reader is not None and not self._reader.done():
                self._reader.cancel()
            await self._await_exit(self.settings.stop_grace_seconds * 3)

    async def _taken_in(self) -> list[Event]:
        """What the agent committed in its own object directory, in its repository's
        store (verified): at each turn's end, and once its process is gone (a turn
        cut short). A notice if it could not be."""
        worktree = Worktree.from_extra(self.agent.extra)
        if worktree is None:
            return []
        try:
            await take_in(worktree)
        except WorktreeError as exc:
            detail = {"branch": worktree.branch}
            return [Notice(agent_id=self.agent.id, ts=time.time(), kind="worktree",
                           message=str(exc), detail=detail)]  # fmt: skip
        return []

    def _make_guard(self, tree: SharedBudget | None = None) -> Guard:
        budgets = self.governor.profile_for(self.agent).budgets
        limits = Limits(
            max_usd=self.agent.spec.budget_usd
            if self.agent.spec.budget_usd is not None
            else budgets.max_usd,
            max_turns=budgets.max_turns,
            max_wall_seconds=budgets.max_wall_seconds,
            max_consecutive_tool_errors=budgets.max_consecutive_tool_errors,
            max_repeated_calls=budgets.max_repeated_calls,
        )
        return Guard(
            limits,
            started_at=time.time(),
            base_cost=self.agent.cost_usd,
            base_turns=self.agent.turns,
            fleet=self.fleet,
            tree=tree,
            budgets=self.budgets,
        )

    async def _watch_clock(self) -> None:
        while not self.finished.is_set():
            await asyncio.sleep(1.0)
            if self.guard is not None and self._guard_stop is None:
                stop = self.guard.check_clock(time.time())
                if stop is not None:
                    await self._trip(stop)

    async def _trip(self, stop: Stop) -> None:
        """A guardrail tripped: say why, then stop the agent and its processes."""
        if self._guard_stop is not None or self.finished.is_set():
            return
        self._guard_stop = stop
        logger.warning("agent %s stopped: %s", self.agent.id, stop.message)
        await self._commit(
            [
                ErrorOccurred(
                    agent_id=self.agent.id,
                    ts=time.time(),
                    kind=f"guardrail:{stop.kind}",
                    message=stop.message,
                )
            ],
            last_error=stop.message,
        )
        task = asyncio.create_task(self._stop_for_guard(), name=f"agent-guard-{self.agent.id}")
        self._background = task  # keep a reference until it is done

    async def _stop_for_guard(self) -> None:
        self._stopping = AgentState.ERROR
        self._terminating = True
        pid = self.pid
        if pid is not None:
            await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)

    async def _watch_exit(self) -> None:
        """Once its Claude Code process has ended, what it left running is stopped:
        the SDK reads the process's output to its end, and a process left behind
        with that output open (a sandbox's init, which waits for a process the
        agent started in the background) would keep the session from ever ending."""
        process = sdk_private.client_process(self._client)
        if process is None:
            return
        await process.wait()
        await self._end_leftovers()

    async def _end_leftovers(self) -> None:
        """Stop whatever still carries this agent (``procs.carrying``): nothing an
        agent started outlives its process."""
        try:
            # Its own only: another runner host on this machine may run the agent now.
            await asyncio.to_thread(
                procs.end_carrying,
                procs.carried_id(self.agent.id, self.agent.extra),
                self.settings.stop_grace_seconds,
                os.getpid(),
            )
        except Exception:
            logger.exception("agent %s: what it left running could not be stopped", self.agent.id)

    async def _on_exit(self, failure: BaseException | None) -> None:
        try:
            await self._end(failure)
        finally:  # whatever failed, the session is over: nobody waits on it forever
            self.finished.set()

    async def _end(self, failure: BaseException | None) -> None:
        state: AgentState
        events: list[Event] = []
        last_error = self.agent.last_error
        extra = self.agent.extra
        if self._suspended:
            state, last_error = AgentState.INTERRUPTED, SUSPENDED
            extra = {**extra, "resume_at_start": True}
        elif self._stopping == AgentState.KILLED:
            state = AgentState.KILLED
        elif self._guard_stop is not None:
            state, last_error = AgentState.ERROR, self._guard_stop.message
        elif self._final is not None and (self._stopping or not self.keep_alive):
            state = self._final
        elif self._stopping is not None:
            state = self._stopping
            last_error = self._stop_reason or last_error
        elif isinstance(failure, StoreError):
            # What it does can no longer be recorded (a full disk): it stops, and
            # its end says why (the store gives this write the room it keeps).
            state, last_error = AgentState.ERROR, failure.message
            self._terminating = True
            events.append(
                ErrorOccurred(
                    agent_id=self.agent.id, ts=time.time(), kind="store", message=last_error
                )
            )
        else:
            state = AgentState.ERROR
            code = getattr(failure, "exit_code", None)
            last_error = f"Claude Code exited unexpectedly (exit code {code})"
            if failure is not None and code is None:
                last_error = f"Claude Code stream failed: {failure}"
            events.append(
                ErrorOccurred(
                    agent_id=self.agent.id,
                    ts=time.time(),
                    kind="process",
                    message=last_error,
                    detail=self.stderr_tail() or None,
                )
            )
        try:
            if self.memory is not None:  # before the final state: followers stop at that
                await self.memory.ended()
            await self._end_leftovers()  # before its sandbox's directory goes
            await self.sandboxing.close()
            events += await self._taken_in()  # nothing of the agent's runs to write there now
            await self._record_end(events, state, last_error, extra)
        finally:
            if self._clock is not None:
                self._clock.cancel()
            if self._exit_watch is not None:
                self._exit_watch.cancel()
            if self._client is not None:
                # Its processes were stopped by us: the SDK's clean-up gets a grace, no more.
                graces = 1 if self._terminating else 3
                try:
                    async with asyncio.timeout(self.settings.stop_grace_seconds * graces):
                        await self._client.disconnect()
                except Exception as exc:  # noqa: BLE001 - gone: nothing left to clean
                    logger.debug("agent %s: the SDK's clean-up failed: %r", self.agent.id, exc)

    async def _record_end(
        self, events: list[Event], state: AgentState, last_error: str | None, extra: Any
    ) -> None:
        """The agent's last state, written as essential (a full disk gives it the
        room kept in reserve). When even that fails, it is said: the daemon still
        shows the end (its session's copy); the store has the state before it."""
        try:
            await self._commit(
                events,
                essential=True,
                state=state,
                pid=None,
                current_tool=None,
                last_error=last_error,
                extra=extra,
            )
        except StoreError as exc:
            logger.error(
                "agent %s ended %s (%s), but that could not be recorded: %s",
                self.agent.id,
                state,
                last_error,
                exc,
            )
