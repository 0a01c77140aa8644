"""What one agent's session holds, and how it writes it.

``SessionState`` is the base of ``AgentSession``: its state (its client, its
reader, what stops it), the one write path for its row and its events
(``_commit``), and the answers the policy gives Claude Code (``_can_use_tool``,
``_pre_tool``). The parts (``session_exit``, ``session_stream``,
``session_steering``, ``session``) each add one responsibility on top of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from agentdeck.core.agent import Agent, AgentState
from agentdeck.core.ask_choices import TOOL
from agentdeck.core.events import Event, SandboxBlocked
from agentdeck.core.guardrails import FleetBudget, Guard, Stop
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.redact import scrub
from agentdeck.governance.governor import Governor
from agentdeck.memory.service import Memory
from agentdeck.runner import ask_user, sandboxing, sdk_private
from agentdeck.runner.checkpointing import SessionCheckpoints
from agentdeck.runner.extension import SessionExtension
from agentdeck.runner.memory_hooks import SessionMemory
from agentdeck.runner.warm import Warm, WarmPool
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.checkpoints import Checkpoints

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient, ResultMessage
    from claude_agent_sdk.types import (
        HookContext,
        HookInput,
        HookJSONOutput,
        PermissionResult,
        ToolPermissionContext,
    )

    from agentdeck.runner.mapping import PayloadSink

logger = logging.getLogger(__name__)


STOPPED_STARTING = "stopped while starting"
# After its process is gone, how long the SDK's reader gets to notice before it is
# ended for it (it misses it when a tool call of ours holds it).
READER_GRACE_SECONDS = 0.5
ABORT_GRACE_SECONDS = 0.2

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


class SessionState:
    """An agent's session: its state and its one write path (``_commit``)."""

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
        # The SDK (and all of mcp with it) is imported once a session is made, not
        # with the runner: a deck opened for one command starts none (its test:
        # tests/runner/test_lazy_sdk.py).
        from agentdeck.runner.background import BackgroundTasks
        from agentdeck.runner.mapping import MessageMapper

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

    def _exit_deadline(self, graces: float) -> float:
        """How long to wait for the process to end: a few graces, plus the time it
        may still take to start if it has not connected yet (``start`` then stops it)."""
        starting = self._client is None and not self.finished.is_set()
        return self.settings.stop_grace_seconds * graces + (
            self.settings.connect_timeout_seconds if starting else 0.0
        )

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

    async def _can_use_tool(
        self, tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """Claude Code asks when its own rules need a prompt: the Governor answers."""
        from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

        if tool == TOOL:  # a question for a person, not a call to approve
            return await ask_user.answered(self.governor, self.extension, self.agent, tool_input)
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
        if tool == TOOL:
            judged = await ask_user.pre_tool(self.governor, self.agent, tool_input)
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow" if judged.allowed else "deny",
                    "permissionDecisionReason": judged.reason,
                }
            }
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
            updated = agent.with_changes(updated_at=now, **changes)
            await self.store.record(out, updated, essential=essential)
            # Seen once committed, not before: whoever reads the agent (``get_agent``)
            # then finds in the log every event that led to it. The writer settles this
            # task before it wakes the hub's followers, so they see it too.
            self.agent = updated
