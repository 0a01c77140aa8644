"""What a runner holds, and what it answers once its agents run.

``RunnerBase`` is the base of ``Runner``: its collaborators and its sessions,
the capacity and the creation guard every start goes through, the steering
commands other processes queue for its agents, merges and rewinds. The parts
(``warm_starts``, ``creation``, ``restarts``, ``shutdown``) each add one
responsibility on top of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import Agent
from agentdeck.core.checkpoint import Rewind
from agentdeck.core.lifecycle import REFUSALS
from agentdeck.core.merge_queue import MergeEntry
from agentdeck.core.partial import PartialSink
from agentdeck.core.worktree import Strategy
from agentdeck.errors import AgentProcessError, NotFound, Refused, ShuttingDown
from agentdeck.governance.governor import Governor
from agentdeck.memory.service import Memory
from agentdeck.runner import checkpointing
from agentdeck.runner.budgets import DailyBudgets
from agentdeck.runner.extension import SessionExtension
from agentdeck.runner.merge_queue import MergeQueue
from agentdeck.runner.payloads import PayloadStore
from agentdeck.runner.scripted import ScriptedModels
from agentdeck.runner.session import STOPPED_STARTING, AgentSession
from agentdeck.runner.warm import WarmPool
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.checkpoints import Checkpoints

if TYPE_CHECKING:  # the scripted model loads only for --scenario runs
    from agentdeck.mockmodel import MockModel, Scenario
    from agentdeck.runner.recording.service import Recorder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunnerParts:
    """What a runner works with, built by the composition root (``daemon.compose``)."""

    governor: Governor
    memory: Memory
    daily: DailyBudgets
    worktrees: Worktrees
    checkpoints: Checkpoints
    merges: MergeQueue
    payloads: PayloadStore
    warm: WarmPool


class RunnerBase:
    """A runner's state and collaborators, and the steering it serves."""

    @property
    def refused_transitions(self) -> dict[str, int]:
        """Illegal state changes asked for in this process, by ``old -> new``
        (never written; a non-zero count is a bug to report)."""
        return REFUSALS.as_dict()

    def __init__(self, store: Store, settings: Settings, parts: RunnerParts) -> None:
        """``parts``: the collaborators, built by the composition root
        (``daemon.compose``), never here."""
        self.store = store
        self.settings = settings
        self.payloads = parts.payloads
        self.worktrees = parts.worktrees
        self.checkpoints = parts.checkpoints
        self.sessions: dict[str, AgentSession] = {}
        # First prompts that held a secret, as typed, by agent: the store and every
        # view have only the redacted copy; a relaunch by this process gives the real
        # one again (never written anywhere).
        self._prompts: dict[str, str] = {}
        # One scripted model per scenario, however many agents start on it at once.
        self.models = ScriptedModels()
        self.start_slots = asyncio.Semaphore(settings.max_concurrent_starts)
        # Set once the runner is to stop: no agent starts any more (``ShuttingDown``);
        # the creations under way are counted, and the shutdown waits for them.
        self._closing = False
        self._suspending = False
        self._creations = 0
        # Agents being started whose session is not registered yet (by creation task):
        # counted as live, so creations at once cannot pass the limit together.
        self._starting: dict[str, asyncio.Task[Any] | None] = {}
        self._stops: dict[str, asyncio.Future[None]] = {}  # each session's stop, once begun
        self._no_creation = asyncio.Event()
        self._no_creation.set()
        self._commands: asyncio.Task[None] | None = None
        # Set by a NOTIFY for a steering command (a runner host on PostgreSQL):
        # the commands are looked at now, not at the next poll.
        self.commands_waiting = asyncio.Event()
        self.claimer = f"pid:{os.getpid()}"
        self.governor = parts.governor
        self.memory = parts.memory
        self.daily = parts.daily
        # The deck's MCP tools, tree budgets, notes: orchestration's, attached by the
        # composition root (``attach``).
        self.extension: SessionExtension | None = None
        # Where its sessions hand the text being written (the daemon's event hub).
        self.partials: PartialSink | None = None
        self._launching: set[asyncio.Task[None]] = set()
        self.merges = parts.merges
        self.warm = parts.warm
        self._recorder: Recorder | None = None

    @property
    def recorder(self) -> Recorder:
        """Its recording proxy (runner.recording), made when an agent is first recorded."""
        if self._recorder is None:
            from agentdeck.runner.recording.service import Recorder

            self._recorder = Recorder(self.settings)
        return self._recorder

    def attach(self, extension: SessionExtension) -> None:
        """What every session of this runner gets beside its own: orchestration."""
        self.extension = extension

    @property
    def stopping(self) -> bool:
        """Whether the runner refuses new agents: it is stopping (readiness reads it)."""
        return self._closing

    def live_count(self) -> int:
        live = {k for k, s in self.sessions.items() if not s.finished.is_set()}
        return len(live | self._starting.keys())

    def check_capacity(self, agent_id: str | None = None) -> None:
        """Refuse a new agent past ``max_live_agents`` (each is a Claude Code process).
        ``agent_id``: the agent about to start, counted from now until its session is
        registered or its creation ends (``_creation``), so that creations under way
        at once each see the others."""
        live = self.live_count()
        if live >= self.settings.max_live_agents:
            plural = "" if live == 1 else "s"
            raise Refused(
                f"this deck already runs {live} agent{plural}, its limit "
                f"(AGENTDECK_MAX_LIVE_AGENTS={self.settings.max_live_agents})",
                hint="stop an agent or wait for one to finish, then start this one",
            )
        if agent_id is not None:
            self._starting[agent_id] = asyncio.current_task()

    @contextlib.asynccontextmanager
    async def _creation(self) -> AsyncIterator[None]:
        """One agent being started (started, resumed, relaunched): refused once the
        runner is stopping; the shutdown waits for those under way, which stop at
        their next step. One stopped so says the daemon is stopping."""
        if self._closing:
            raise ShuttingDown()
        self._creations += 1
        self._no_creation.clear()
        try:
            yield
        except AgentProcessError as exc:
            if self._closing and exc.message == STOPPED_STARTING:
                raise ShuttingDown(
                    "the daemon is stopping: the agent was stopped while starting"
                ) from exc
            raise
        finally:
            task = asyncio.current_task()
            for agent_id in [k for k, t in self._starting.items() if t is task]:
                del self._starting[agent_id]
            self._creations -= 1
            if not self._creations:
                self._no_creation.set()

    async def _model_url(self, scenario: Scenario) -> str:
        url = await self.models.url(scenario)
        if self._closing:  # the shutdown stops it, with the others
            raise ShuttingDown()
        return url

    def scripted_models(self) -> dict[str, MockModel]:
        """The scripted models started so far, by scenario."""
        return self.models.started()

    # -- steering ----------------------------------------------------------------

    def live(self, agent_id: str) -> AgentSession | None:
        """The session this process supervises for the agent, if it is still running."""
        session = self.sessions.get(agent_id)
        return session if session is not None and not session.finished.is_set() else None

    def session(self, agent_id: str) -> AgentSession:
        session = self.live(agent_id)
        if session is None:
            raise NotFound("live agent", agent_id)
        return session

    def _ensure_command_loop(self) -> None:
        if self._commands is None or self._commands.done():
            self._commands = asyncio.create_task(self._serve_commands(), name="runner-commands")

    async def _serve_commands(self) -> None:
        """Carry out steering commands other processes queued for our agents."""
        while True:
            live = [aid for aid, s in self.sessions.items() if not s.finished.is_set()]
            if live:
                try:
                    for command in await self.store.claim_commands(live, self.claimer):
                        await self._apply(command.agent_id, command.kind, command.payload)
                except Exception:
                    logger.exception("steering command failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.command_poll_seconds):
                    await self.commands_waiting.wait()
            self.commands_waiting.clear()

    async def _apply(self, agent_id: str, kind: str, payload: dict[str, object]) -> None:
        session = self.live(agent_id)
        if session is None:
            return
        if kind == "send":
            await session.send(str(payload.get("text", "")))
        elif kind == "interrupt":
            await session.interrupt()
        elif kind == "kill":
            await session.kill()
        else:
            logger.warning("unknown steering command %r for %s", kind, agent_id)

    # -- stopping ----------------------------------------------------------------

    async def merge(
        self,
        agent: Agent,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        by: str = "user:cli",
        wait: bool = True,
    ) -> MergeEntry:
        """Put the agent's branch in its repository's merge queue (test-gated, one
        at a time); with ``wait``, its outcome. Either way a ``merge`` notice and an
        audit entry record the outcome."""
        entry = await self.merges.enqueue(agent, into=into, strategy=strategy, test=test, by=by)
        return await self.merges.wait(entry.id) if wait else entry

    async def rewind(
        self, agent: Agent, *, to: int | None = None, dry_run: bool = False, by: str = "user:cli"
    ) -> Rewind:
        """Its workspace back to checkpoint ``to`` (default: the last one)."""
        return await checkpointing.rewind(
            self.checkpoints, self.store, self.governor, agent, to=to, dry_run=dry_run, by=by
        )
