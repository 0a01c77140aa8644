"""One supervised Claude Code process for one agent.

An ``AgentSession`` owns a ``ClaudeSDKClient``, reads every message it yields,
turns it into events and commits them together with the agent row (so the board
never disagrees with the log). Steering — follow-ups, interrupt, kill, graceful
close — goes through it. In one-shot mode (``agentdeck run``) the session ends
after its first result, once no turn, background task or report of one is
under way or owed (``runner.background``): stdin is closed and the CLI is read
until it exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio.to_thread
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from claude_agent_sdk.types import (
    HookContext,
    HookInput,
    HookJSONOutput,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.event_scrub import scrubbed_head
from agentdeck.core.events import (
    ErrorOccurred,
    Event,
    Notice,
    SandboxBlocked,
    UserMessageSent,
)
from agentdeck.core.guardrails import FleetBudget, Guard, Limits, SharedBudget, Stop
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.redact import scrub
from agentdeck.core.sandbox import SandboxSpec
from agentdeck.core.worktree import Worktree
from agentdeck.errors import (
    AgentProcessError,
    InvalidState,
    SandboxUnavailable,
    StoreError,
    WorktreeError,
)
from agentdeck.governance.governor import Governor
from agentdeck.memory.service import Memory
from agentdeck.runner import procs, sandboxing, sdk_private
from agentdeck.runner.background import BackgroundTasks
from agentdeck.runner.budgets import warnings_due
from agentdeck.runner.checkpointing import SessionCheckpoints
from agentdeck.runner.extension import SessionExtension
from agentdeck.runner.mapping import MessageMapper, PayloadSink, is_heavy
from agentdeck.runner.memory_hooks import SessionMemory
from agentdeck.runner.options import build_options
from agentdeck.runner.warm import Warm, WarmPool
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.admin import confine
from agentdeck.worktrees.checkpoints import Checkpoints
from agentdeck.worktrees.objects import take_in

STOPPED_STARTING = "stopped while starting"
# After its process is gone, how long the SDK's reader gets to notice before it is
# ended for it (it misses it when a tool call of ours holds it).
READER_GRACE_SECONDS = 0.5
ABORT_GRACE_SECONDS = 0.2
logger = logging.getLogger(__name__)

_STDERR_LINES = 40
_INTERRUPTED_REASONS = {"aborted_tools", "aborted_streaming"}
# What the row keeps of the last result (``list_agents``, ``wait_for_agents``).
RESULT_EXCERPT_CHARS = 4000
SUSPENDED = "the daemon stopped during its turn; it carries on when the daemon starts again"


def stopped_start(extra: dict[str, Any], *, suspended: bool) -> tuple[dict[str, Any], str]:
    """What a start stopped before the agent ran leaves on it: its extra (marked to be
    started again by the next daemon when it was suspended, the daemon stopping) and
    its last error."""
    if suspended:
        return {**extra, "resume_at_start": True}, SUSPENDED
    return extra, STOPPED_STARTING


def final_state_for(result: ResultMessage) -> AgentState:
    """How a one-shot run ended, judged as the protocol notes advise."""
    if result.terminal_reason in _INTERRUPTED_REASONS:
        return AgentState.INTERRUPTED
    if result.is_error:
        return AgentState.ERROR
    return AgentState.DONE


class AgentSession:
    def __init__(
        self,
        agent: Agent,
        *,
        store: Store,
        settings: Settings,
        payloads: PayloadSink,
        base_url: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        keep_alive: bool = False,
        governor: Governor,
        fleet: FleetBudget | None = None,
        budgets: tuple[FleetBudget, ...] = (),
        memory: Memory | None = None,
        extension: SessionExtension | None = None,
        worktrees: Worktrees | None = None,
        checkpoints: Checkpoints | None = None,
        start_slots: asyncio.Semaphore | None = None,
        warm: Warm | None = None,
        warm_pool: WarmPool | None = None,
    ) -> None:
        self.fleet = fleet
        # A process started ahead for it (its id and workspace are the warm one's).
        self._warm = warm
        self._warm_pool = warm_pool
        self.warm_start = False  # it runs on a warm process
        self.budgets = budgets  # the daily budgets of its user and project
        self._start_slots = start_slots  # how many Claude Codes may boot at once
        self.checkpoints = (
            SessionCheckpoints(checkpoints, lambda: self.agent, self._commit)
            if checkpoints
            else None
        )
        self.worktrees = worktrees
        self.extension = extension
        # A new session is told the project's memory; a resumed one has its history.
        self.memory = (
            SessionMemory(memory, lambda: self.agent, inject=resume is None) if memory else None
        )
        self.agent = agent
        self.governor = governor
        self.store = store
        self.settings = settings
        self.keep_alive = keep_alive
        self._resume = resume
        self._fork = fork
        self._base_url = base_url
        self._mapper = MessageMapper(agent.id, payloads, settings.tool_output_limit)
        self._mapper.session_id = None if fork else resume
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._client: ClaudeSDKClient | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._cost_base = agent.cost_usd
        self._final: AgentState | None = None  # decided by a result, applied at exit
        self.sandboxing = sandboxing.Sandboxing("off")
        self._pending: set[asyncio.Future[None]] = set()
        self._started = asyncio.Event()  # start() is over, whatever its outcome
        self._stopping: AgentState | None = None  # set by kill()/close()/suspend()
        self._stop_reason: str | None = None  # why halt() stopped it, if it was told
        self._connecting: ClaudeSDKClient | None = None  # its client, while it starts
        self._aborted = False  # its start was stopped by abort_start()
        self._waiting_slot: asyncio.Future[Any] | None = None
        self._terminating = False  # its processes are being stopped (not a graceful close)
        self._input_ended = False  # its stdin is closed: nothing more reaches it
        self._background_tasks = BackgroundTasks()  # what may still ask after a result
        self._suspended = False
        self._guard_stop: Stop | None = None  # a budget or circuit breaker tripped
        self.guard: Guard | None = None
        self._clock: asyncio.Task[None] | None = None
        self._exit_watch: asyncio.Task[None] | None = None
        self._results: asyncio.Queue[ResultMessage] = asyncio.Queue()
        self.finished = asyncio.Event()
        self.turn_over = asyncio.Event()  # its first turn ended (a result came)
        self.last_result: ResultMessage | None = None
        self.spawned_pid: int | None = None  # the CLI's pid, kept after it exits

    @property
    def pid(self) -> int | None:
        return sdk_private.pid_of(self._client)

    @property
    def starting(self) -> bool:
        """Its start is under way: it has no connected Claude Code to steer yet."""
        return self._client is None and not self.finished.is_set()

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

    # -- lifecycle -------------------------------------------------------------

    async def start(self, prompt: str | None) -> None:
        """Spawn the CLI and send the first prompt (none: wait idle for one).

        Raises ``AgentProcessError``.
        """
        try:
            await self._start(prompt)
        finally:
            if self._warm is not None and self._warm_pool is not None:  # never reached spawn
                self._warm_pool.discard(self._warm, keep_cwd=True)
                self._warm = None
            self._started.set()  # a message sent meanwhile goes now, after the prompt

    async def _start(self, prompt: str | None) -> None:
        extension = self.extension
        client: ClaudeSDKClient | None = None
        slot = False
        try:
            self._go_on()
            tree = await extension.budget(self.agent) if extension else None
            sandbox = self.governor.profile_for(self.agent).sandbox
            worktree = Worktree.from_extra(self.agent.extra)
            if worktree is not None and sandbox.enabled:
                sandbox = sandbox.with_git_dir(
                    await confine(worktree), workspace=self.agent.cwd, home=str(Path.home())
                )
            self.sandboxing = await self._warm_sandboxing(sandbox) or await sandboxing.prepare(
                sandbox,
                workspace=Path(self.agent.cwd),
                settings=self.settings,
                endpoint=self._base_url or self.settings.anthropic_base_url,
                on_blocked=self._network_blocked,
            )
            await self._commit(
                [
                    Notice(
                        agent_id=self.agent.id,
                        ts=time.time(),
                        kind="sandbox",
                        message=self.sandboxing.notice,
                    )
                ]
                if self.sandboxing.notice
                else [],
                extra={**self.agent.extra, "sandbox": self.sandboxing.label},
            )
            options = self.spawn_options()
            slot = await self._take_slot()
            self._go_on()
            client = self._connecting = self._client_for(options)
            try:
                async with asyncio.timeout(self.settings.connect_timeout_seconds):
                    await client.connect()
            finally:  # abort_start() must never signal a pid that is no longer its process
                self._connecting = None
            self._go_on()  # stopped while it connected: it goes no further
        except asyncio.CancelledError:
            try:
                if client is not None:  # the process may be up already: never leave it
                    pid = sdk_private.pid_of(client)
                    if pid is not None:  # at once: a process mid-start does not read stdin
                        await asyncio.shield(
                            asyncio.to_thread(
                                procs.terminate_tree, pid, self.settings.stop_grace_seconds
                            )
                        )
                    await asyncio.shield(self._disconnect(client))
                await asyncio.shield(self.sandboxing.close())
                # Never left ``starting`` with no process: stopped before it began.
                try:
                    await asyncio.shield(self._record_stopped_start())
                except Exception:
                    logger.exception(
                        "agent %s: its start was stopped, but that could not be recorded",
                        self.agent.id,
                    )
            finally:
                self.finished.set()
            raise
        except (Exception, TimeoutError) as exc:
            # Whatever stopped it, the agent says so: never left ``starting``.
            try:
                raise await self._start_failed(client, exc) from exc
            finally:
                self.finished.set()
        finally:
            if slot and self._start_slots is not None:
                self._start_slots.release()
        self._client = client
        self.spawned_pid = self.pid
        self.guard = self._make_guard(tree)
        self._clock = asyncio.create_task(self._watch_clock(), name=f"agent-clock-{self.agent.id}")
        self._exit_watch = asyncio.create_task(
            self._watch_exit(), name=f"agent-exit-{self.agent.id}"
        )
        if self.warm_start:  # on a process the pool started ahead: the board can say so
            await self._commit(
                [], pid=self.pid, owner_pid=os.getpid(), extra={**self.agent.extra, "warm": True}
            )
        else:
            await self._commit([], pid=self.pid, owner_pid=os.getpid())
        self._reader = asyncio.create_task(self._read(), name=f"agent-reader-{self.agent.id}")
        if self._stopping is not None:
            # Killed, closed or suspended while it was starting: it gets no prompt,
            # its process goes, and the reader records the state that was asked for.
            pid = self.pid
            if pid is not None:
                await asyncio.to_thread(procs.terminate_tree, pid, self.settings.stop_grace_seconds)
            return
        if prompt is None:
            await self._commit([], state=AgentState.IDLE)
        else:
            await self.send(prompt)

    def spawn_options(self) -> ClaudeAgentOptions:
        """The SDK's options for its Claude Code process (once its sandbox is prepared)."""
        extension = self.extension
        options = build_options(
            self.agent.spec,
            mcp_servers=extension.mcp_servers(self.agent) if extension else None,
            extra_env=extension.env(self.agent) if extension else None,
            settings=self.settings,
            cwd=Path(self.agent.cwd),
            can_use_tool=self._can_use_tool,
            pre_tool=self._pre_tool,
            hook_timeout=self.governor.profile_for(self.agent).approval_timeout_seconds + 60,
            extra_hooks=self.memory.hooks() if self.memory else None,
            agent_id=self.agent.id,
            stderr=self._stderr.append,
            base_url=self._base_url,
            resume=self._resume,
            fork=self._fork,
            stopping=lambda: self.unanswerable,
        )
        self.sandboxing.apply(options)
        return options

    async def _warm_sandboxing(self, sandbox: SandboxSpec) -> sandboxing.Sandboxing | None:
        """The confinement of the warm process it was given, if that process runs
        confined exactly as its profile asks (same sandbox, same workspace): the
        process can only be adopted inside it. Another is closed, not used."""
        if self._warm is None:
            return None
        box = self._warm.take_sandboxing(self._network_blocked)
        if box is None or box.confinement is None:
            return None
        plan = box.confinement.plan
        if box.confinement.spec == sandbox and plan.workspace == Path(self.agent.cwd).resolve():
            return box
        await box.close()
        return None

    def _client_for(self, options: ClaudeAgentOptions) -> ClaudeSDKClient:
        """Its client: on the warm process it was given if that process was spawned
        exactly as this one would be, else on a process of its own."""
        warm, self._warm = self._warm, None
        if warm is not None:
            if warm.fits(options):
                warm.stderr.attach(self._stderr.append)
                self.warm_start = True
                return sdk_private.held_client(options, transport=warm.transport)
            if self._warm_pool is not None:
                self._warm_pool.discard(warm, keep_cwd=True)  # the workspace is this agent's
        return sdk_private.held_client(options)

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

    async def _start_failed(
        self, client: ClaudeSDKClient | None, exc: BaseException
    ) -> AgentProcessError:
        """A start that failed (or was stopped) cleaned up and recorded: ``error``
        with why, or as a stopped start; the error to raise."""
        if client is not None:
            if self._aborted and (pid := sdk_private.pid_of(client)) is not None:
                await asyncio.to_thread(procs.terminate_tree, pid, ABORT_GRACE_SECONDS)
            await self._disconnect(client)
        await self.sandboxing.close()
        if self._aborted:  # a stop was asked for: no error of the agent's
            await self._record_stopped_start()
            return AgentProcessError(STOPPED_STARTING)
        if isinstance(exc, SandboxUnavailable):
            message, kind = f"sandbox unavailable: {exc.message}", "sandbox"
        else:
            message, kind = f"could not start Claude Code: {self._why(exc)}", "spawn"
        await self._commit(
            [
                ErrorOccurred(
                    agent_id=self.agent.id,
                    ts=time.time(),
                    kind=kind,
                    message=message,
                    detail=self.stderr_tail(),
                )
            ],
            state=AgentState.ERROR,
            last_error=message,
            pid=None,
        )
        return AgentProcessError(message, stderr=self.stderr_tail())

    def _go_on(self) -> None:
        """The start's next step, unless a stop was asked for meanwhile."""
        if self._aborted:
            raise _StartStopped(STOPPED_STARTING)

    async def _take_slot(self) -> bool:
        """Its turn to boot (``start_slots``: a burst of starts does not boot every
        Claude Code at once on a small machine); a stop meanwhile ends the wait."""
        if self._start_slots is None:
            return False
        waiting = self._waiting_slot = asyncio.ensure_future(self._start_slots.acquire())
        try:
            await waiting
            return True
        except asyncio.CancelledError:
            if self._aborted and waiting.cancelled():
                raise _StartStopped(STOPPED_STARTING) from None
            raise
        finally:
            self._waiting_slot = None

    async def _record_stopped_start(self) -> None:
        """A start stopped before the agent ran: ``interrupted`` (or ``killed``), and
        marked to be started again by the next daemon when it was suspended (the
        daemon stopping), whichever way the stop reached the start."""
        extra, last_error = stopped_start(self.agent.extra, suspended=self._suspended)
        await self._commit(
            [], state=self._stopped_starting(), last_error=last_error, pid=None, extra=extra
        )

    async def _disconnect(self, client: ClaudeSDKClient) -> None:
        """The SDK's clean-up of a start that failed or was stopped: its process is
        gone or going, so it gets a bounded moment, never a stop's whole time."""
        try:
            await asyncio.wait_for(
                asyncio.shield(client.disconnect()), self.settings.stop_grace_seconds * 2
            )
        except (Exception, TimeoutError) as exc:
            logger.debug("agent %s: the SDK's clean-up failed: %r", self.agent.id, exc)

    def _network_blocked(self, host: str, port: int) -> None:
        """The sandbox's proxy refused a connection: the log says where to."""
        event = SandboxBlocked(
            agent_id=self.agent.id,
            ts=time.time(),
            what="network",
            target=f"{host}:{port}",
            detail="not in the profile's network.allowed_domains",
        )
        task = asyncio.ensure_future(self._commit([event]))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

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

    def _stopped_starting(self) -> AgentState:
        """A start stopped by a kill is ``killed``; by anything else (a close, a
        suspend, a daemon stopping) ``interrupted``: it never ran, it is not done."""
        return AgentState.KILLED if self._stopping == AgentState.KILLED else AgentState.INTERRUPTED

    def _why(self, exc: BaseException) -> str:
        """The SDK's error, with what Claude Code wrote on stderr last (scrubbed)
        instead of its advice to go and read it."""
        own = ("Check stderr output for details", "Fatal error in message reader")
        lines = [ln.strip() for ln in self._stderr if ln.strip() and not ln.startswith(own)]
        said = " | ".join(lines[-3:])
        # Never blank: a message of whitespace says no more than none.
        reason = next(iter(str(exc).strip().splitlines()), "") or type(exc).__name__
        return f"{reason}; Claude Code said: {scrub(said)[-600:]}" if said else reason

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    # -- internals -------------------------------------------------------------

    def _exit_deadline(self, graces: float) -> float:
        """How long to wait for the process to end: a few graces, plus the time it
        may still take to start if it has not connected yet (``start`` then stops it)."""
        starting = self._client is None and not self.finished.is_set()
        return self.settings.stop_grace_seconds * graces + (
            self.settings.connect_timeout_seconds if starting else 0.0
        )

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

    async def _await_exit(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            await self.finished.wait()

    @property
    def unanswerable(self) -> bool:
        """Nothing written to the CLI can reach it any more: its processes are
        being stopped, or its input is closed (``callbacks.held``)."""
        return self._terminating or self._input_ended

    async def _end_input(self) -> None:
        self._input_ended = True
        await sdk_private.end_input(self._client)

    async def _read(self) -> None:
        assert self._client is not None
        failure: BaseException | None = None
        try:
            async for message in self._client.receive_messages():
                await self._on_message(message)
        except asyncio.CancelledError:
            failure = None
            raise
        except Exception as exc:  # noqa: BLE001 - any SDK failure ends this agent
            failure = exc
        finally:
            await asyncio.shield(self._on_exit(failure))

    async def _on_message(self, message: object) -> None:
        self._background_tasks.see(message)
        if is_heavy(message, self._mapper.output_limit):  # scrubs megabytes: off the loop
            mapped = await anyio.to_thread.run_sync(self._mapper.map, message)
        else:
            mapped = self._mapper.map(message)
        changes: dict[str, Any] = dict(mapped.changes)
        result = mapped.result
        if result is not None:
            self.last_result = result
            changes.update(
                cost_usd=self._cost_base + (result.total_cost_usd or 0.0),
                input_tokens=self.agent.input_tokens + _tokens(mapped.events, "input_tokens"),
                output_tokens=self.agent.output_tokens + _tokens(mapped.events, "output_tokens"),
                turns=self.agent.turns + result.num_turns,
                last_error=scrub(result.result or "; ".join(result.errors or []) or result.subtype)
                if result.is_error and result.terminal_reason not in _INTERRUPTED_REASONS
                else None,
                extra={
                    **self.agent.extra,
                    "last_result": scrubbed_head(result.result or "", RESULT_EXCERPT_CHARS),
                    "last_is_error": bool(result.is_error),
                },
            )
            if self.keep_alive:
                changes["state"] = AgentState.IDLE
            else:
                self._final = final_state_for(result)
        elif mapped.events and self.agent.state == AgentState.STARTING:
            changes["state"] = AgentState.RUNNING
        if self.sandboxing.label in ("process", "bash"):
            mapped.events += sandboxing.blocked_write_events(self.agent.id, mapped.events)
        if mapped.events or changes:
            await self._commit(mapped.events, **changes)
            if self.memory is not None:
                self.memory.saw(mapped.events)
        if self.guard is not None:
            for event in mapped.events:
                stop = self.guard.observe(event)
                if stop is not None:
                    await self._trip(stop)
            daily = (self.fleet, *self.budgets) if self.fleet else self.budgets
            if warnings := warnings_due(daily, self.agent.id, time.time()):
                await self._commit(list(warnings))
        if result is not None:
            await self._snapshot_turn()
            self._results.put_nowait(result)
            self.turn_over.set()
        # One-shot: its input ends with its work (after its first result), not while
        # a background task or the turn reporting it may still ask (the answers
        # would never reach the CLI): at a result, or when the last task ends.
        if (
            not self.keep_alive
            and self.turn_over.is_set()
            and not self._input_ended
            and not self._background_tasks.holds_input
        ):
            await self._end_input()

    async def _snapshot_turn(self) -> None:
        """What the turn left uncommitted in the agent's worktree, committed on its
        branch: nothing lives only in a working tree. Then what its commits wrote
        in its own object directory, verified into the repository's store."""
        worktree = Worktree.from_extra(self.agent.extra)
        if worktree is None:
            return
        notices: list[tuple[str, dict[str, str]]] = []
        if self.worktrees is not None and self.settings.worktree_wip_commits:
            try:
                commit = await self.worktrees.commit_wip(
                    worktree,
                    f"agentdeck: {self.agent.name}, work in progress (turn {self.agent.turns})",
                )
            except WorktreeError as exc:
                notices.append((f"the turn's changes could not be committed: {exc}", {}))
            else:
                if commit is not None:
                    message = f"committed the turn's changes on {worktree.branch} as {commit[:12]}"
                    notices.append((message, {"commit": commit, "branch": worktree.branch}))
        now = time.time()
        events: list[Event] = [
            Notice(agent_id=self.agent.id, ts=now, kind="worktree", message=m, detail=d)
            for m, d in notices
        ]
        events += await self._taken_in()
        if events:
            await self._commit(events)

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
            await asyncio.to_thread(
                procs.end_carrying, self.agent.id, self.settings.stop_grace_seconds
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

    async def _can_use_tool(
        self, tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """Claude Code asks when its own rules need a prompt: the Governor answers."""
        outcome = await self.governor.authorize(
            self.agent, tool, tool_input, context.tool_use_id, waiting=self._waiting
        )
        if outcome.allowed:
            return PermissionResultAllow()
        return PermissionResultDeny(message=outcome.reason)

    async def _pre_tool(
        self, hook_input: HookInput, tool_use_id: str | None, _context: HookContext
    ) -> HookJSONOutput:
        """Every tool call, read-only ones and subagents' included: the policy decides."""
        data = cast(dict[str, Any], hook_input)
        tool = str(data.get("tool_name", ""))
        tool_input = dict(data.get("tool_input") or {})
        outcome = await self.governor.authorize(
            self.agent, tool, tool_input, tool_use_id, waiting=self._waiting
        )
        if outcome.allowed and self.checkpoints is not None:
            await self.checkpoints.before(tool, tool_input, tool_use_id)
        elif not outcome.allowed and self.memory is not None:
            self.memory.denied(tool_use_id)  # it never ran: nothing to remember
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow" if outcome.allowed else "deny",
                "permissionDecisionReason": outcome.reason,
            }
        }

    async def _waiting(self, waiting: bool) -> None:
        """An approval request is open (or was answered): the board shows it."""
        if waiting:
            await self._commit([], state=AgentState.AWAITING_PERMISSION)
        elif self.agent.state == AgentState.AWAITING_PERMISSION:
            await self._commit([], state=AgentState.RUNNING)

    async def _commit(
        self, events: Sequence[Event], *, essential: bool = False, **changes: Any
    ) -> None:
        async with self._lock:
            agent = self.agent
            now = time.time()
            out = list(events)
            new_state = changes.pop("state", None)
            if new_state is not None:
                moved = transition(agent, new_state, ts=now, reason=changes.get("last_error"))
                if moved.refused:
                    logger.warning(REFUSALS.note(agent, new_state))
                agent = moved.agent
                out += moved.events
            self.agent = agent.with_changes(updated_at=now, **changes)
            await self.store.record(out, self.agent, essential=essential)


class _StartStopped(Exception):
    """A stop was asked for while the agent started: its start goes no further."""


def _tokens(events: Sequence[Event], name: str) -> int:
    from agentdeck.core.events import TurnCompleted

    return sum(int(getattr(e, name)) for e in events if isinstance(e, TurnCompleted))
