"""The runner: starts agents, keeps one supervised session per live agent.

It also answers steering commands that other processes left in the store for
agents it owns (``agentdeck interrupt ID`` from another terminal), and owns the
scripted model servers that ``--scenario`` runs talk to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import (
    PROMPT_REDACTED,
    Agent,
    AgentSource,
    AgentSpec,
    AgentState,
    shown_prompt,
)
from agentdeck.core.checkpoint import Rewind
from agentdeck.core.events import ErrorOccurred, Event, spawned_events
from agentdeck.core.guardrails import FleetBudget
from agentdeck.core.ids import new_agent_id
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.merge_queue import MergeEntry
from agentdeck.core.worktree import Strategy, Worktree
from agentdeck.errors import (
    AgentProcessError,
    InvalidState,
    NotFound,
    PolicyDenied,
    Refused,
    SecretNotKept,
    ShuttingDown,
    UsageError,
    WorktreeError,
)
from agentdeck.governance.governor import Governor
from agentdeck.memory.service import Memory
from agentdeck.runner import checkpointing, procs, sandboxing
from agentdeck.runner.budgets import DailyBudgets
from agentdeck.runner.extension import SessionExtension
from agentdeck.runner.merge_queue import MergeQueue
from agentdeck.runner.payloads import PayloadStore
from agentdeck.runner.scripted import ScriptedModels, scenario_of
from agentdeck.runner.session import (
    ABORT_GRACE_SECONDS,
    STOPPED_STARTING,
    AgentSession,
    stopped_start,
)
from agentdeck.runner.warm import Warm, WarmPool, warmable
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees.checkpoints import Checkpoints

if TYPE_CHECKING:  # the scripted model loads only for --scenario runs
    from agentdeck.mockmodel import MockModel, Scenario

logger = logging.getLogger(__name__)

RESUME_PROMPT = "Continue where you left off."
TRANSIENT_EXTRA = ("resume_at_start", "waiting_for", "asking")
# Agents whose turn waits on the deck itself (an answer, their workers, an approval):
# a graceful close would wait for nothing but its timeout.
WAITING_IN_A_TOOL = frozenset(
    {AgentState.AWAITING_INPUT, AgentState.AWAITING_AGENTS, AgentState.AWAITING_PERMISSION}
)


def default_name(prompt: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", prompt.lower())[:4]
    return "-".join(words) or "agent"


def _restarting(agent: Agent, reason: str, now: float) -> tuple[Agent, list[Event]]:
    """The agent back to ``starting`` under this process, and the event that says
    so. What marked it while it was stopped (waiting, asking, to be carried on)
    is over once it runs again."""
    extra = {k: v for k, v in agent.extra.items() if k not in TRANSIENT_EXTRA}
    moved = transition(agent, AgentState.STARTING, ts=now, reason=reason)
    if moved.refused:  # the callers start only a finished agent: never written
        logger.warning(REFUSALS.note(agent, AgentState.STARTING))
        raise InvalidState(agent.id, agent.state, reason)
    restarted = moved.agent.with_changes(
        updated_at=now, owner_pid=os.getpid(), last_error=None, extra=extra
    )
    return restarted, list(moved.events)


class Runner:
    @property
    def refused_transitions(self) -> dict[str, int]:
        """Illegal state changes asked for in this process, by ``old -> new``
        (never written; a non-zero count is a bug to report)."""
        return REFUSALS.as_dict()

    def __init__(self, store: Store, settings: Settings, *, warm_pool: int = 0) -> None:
        """``warm_pool``: Claude Code processes started ahead per template (the daemon's,
        ``settings.warm_pool``; an ``agentdeck run`` starts one agent and keeps none)."""
        self.store = store
        self.settings = settings
        self.payloads = PayloadStore(settings.payloads_dir, raw=settings.raw_payloads)
        self.worktrees = Worktrees(settings.worktrees_dir)
        self.checkpoints = Checkpoints(
            settings.checkpoints_dir, max_file_bytes=settings.checkpoint_max_file_bytes
        )
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
        self._stops: dict[str, asyncio.Future[None]] = {}  # each session's stop, once begun
        self._no_creation = asyncio.Event()
        self._no_creation.set()
        self._commands: asyncio.Task[None] | None = None
        self.claimer = f"pid:{os.getpid()}"
        self.governor = Governor(store, settings)
        self.memory = Memory(store, settings)
        self.daily = DailyBudgets(store)
        # Set by orchestration: the deck's MCP tools, tree budgets, notes.
        self.extension: SessionExtension | None = None
        self._launching: set[asyncio.Task[None]] = set()
        self.merges = MergeQueue(store, self.governor, settings.worktrees_dir / ".merges")
        self.warm = WarmPool(warm_pool)

    def adopt(self, warm: Warm, model: MockModel | None = None) -> None:
        """A Claude Code process started before this runner (an embedded run's,
        ``cli.early``), offered to the next agent of its template as the warm
        pool's are; with the scripted model it was pointed at, served as this
        runner's own for its scenarios."""
        if model is not None:
            self.models.adopt(model)
        self.warm.add(warm)

    # -- starting ----------------------------------------------------------------

    def live_count(self) -> int:
        return sum(1 for s in self.sessions.values() if not s.finished.is_set())

    def check_capacity(self) -> None:
        """Refuse a new agent past ``max_live_agents`` (each is a Claude Code process)."""
        live = self.live_count()
        if live >= self.settings.max_live_agents:
            plural = "" if live == 1 else "s"
            raise Refused(
                f"this deck already runs {live} agent{plural}, its limit "
                f"(AGENTDECK_MAX_LIVE_AGENTS={self.settings.max_live_agents})",
                hint="stop an agent or wait for one to finish, then start this one",
            )

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
            self._creations -= 1
            if not self._creations:
                self._no_creation.set()

    async def start(
        self,
        spec: AgentSpec,
        *,
        keep_alive: bool = False,
        parent_id: str | None = None,
        background: bool = False,
    ) -> AgentSession:
        """Create the agent and start its Claude Code process. With ``background``
        the process is started in a task and the session is returned as soon as
        the agent exists (``starting``); a failure to start is the agent's error.
        Raises ``ShuttingDown`` once the runner stops."""
        async with self._creation():
            return await self._create(
                spec, keep_alive=keep_alive, parent_id=parent_id, background=background
            )

    async def _create(
        self, spec: AgentSpec, *, keep_alive: bool, parent_id: str | None, background: bool
    ) -> AgentSession:
        self.check_capacity()
        scenario = scenario_of(spec.scenario)
        fits_warm = warmable(spec, bool(scenario and scenario.workspace_files))
        # A process started ahead for such an agent: it takes its id and workspace.
        warm = self.warm.take(spec) if fits_warm else None
        agent_id = warm.agent_id if warm else new_agent_id()
        shown = shown_prompt(spec.prompt)
        name = spec.name or default_name(shown)
        extra: dict[str, Any] = {}
        try:
            # Before the agent exists: a model that cannot start leaves nothing behind.
            base_url = await self._model_url(scenario) if scenario else None
            if warm is not None:
                cwd = warm.cwd
            elif spec.workspace == "worktree":
                worktree = await self._worktree(agent_id, name, spec)
                cwd, extra["worktree"] = Path(worktree.path), worktree.to_dict()
            else:
                cwd = self._workspace(agent_id, spec, scenario)
        except BaseException:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=False)
            raise
        now = time.time()
        if shown != spec.prompt:
            self._forget_prompts()
            self._prompts[agent_id] = spec.prompt
            extra[PROMPT_REDACTED] = True
        agent = Agent(
            id=agent_id,
            name=name,
            state=AgentState.STARTING,
            # What is stored and shown; the model is given ``spec.prompt``.
            spec=replace(spec, prompt=shown),
            cwd=str(cwd),
            created_at=now,
            updated_at=now,
            source=AgentSource.AGENTDECK,
            owner_pid=os.getpid(),
            parent_id=parent_id,
            extra=extra,
        )
        # Recorded by _prepare once its session is registered: a message, interrupt or
        # kill that finds the new row finds the session too (not an orphan to reconcile).
        if not background:
            session = await self._launch(
                agent, spec.prompt, base_url=base_url, keep_alive=keep_alive, warm=warm, new=True
            )
            if fits_warm:
                self.warm.fill(spec, self._prestart, after=self._turn_over(session))
            return session
        session = await self._prepare(
            agent, base_url=base_url, keep_alive=keep_alive, warm=warm, new=True
        )
        if fits_warm:
            self.warm.fill(spec, self._prestart, after=self._turn_over(session))
        task = asyncio.create_task(
            self._start_quietly(session, spec.prompt), name=f"agent-start-{agent.id}"
        )
        self._launching.add(task)
        task.add_done_callback(self._launching.discard)
        return session

    def _forget_prompts(self) -> None:
        """Raw prompts no relaunch can use any more: their agent's Claude session
        began (it is resumed from there, never given its first prompt again)."""
        for agent_id in [a for a in self._prompts if a in self.sessions]:
            if self.sessions[agent_id].agent.session_id:
                del self._prompts[agent_id]

    async def _start_quietly(self, session: AgentSession, prompt: str | None) -> None:
        try:
            await session.start(prompt)
        except Exception as exc:  # noqa: BLE001 - recorded as the agent's error by start()
            logger.warning("agent %s did not start: %s", session.agent.id, exc)
        self._ensure_command_loop()

    async def resume(
        self,
        ref: str,
        text: str | None = None,
        *,
        fork: bool = False,
        keep_alive: bool = False,
        idle: bool = False,
    ) -> AgentSession:
        """Continue a finished agent's Claude session in a new process (or fork it).

        With ``idle`` (and ``keep_alive``) nothing is said: the process waits for
        a message; otherwise ``text`` (default: a request to continue) is sent.
        """
        async with self._creation():
            return await self._resume(ref, text, fork=fork, keep_alive=keep_alive, idle=idle)

    async def _resume(
        self, ref: str, text: str | None, *, fork: bool, keep_alive: bool, idle: bool
    ) -> AgentSession:
        agent = await self.store.find_agent(ref)
        if agent.source is AgentSource.EXTERNAL and not fork:
            raise UsageError(
                f"{agent.id} is a hand-started Claude Code session (source external): "
                "agentdeck cannot resume it",
                hint=f"resume it yourself (claude --resume {agent.session_id}) "
                "or fork it with agentdeck resume --fork",
            )
        if self.live(agent.id) is not None or (agent.state.is_live and not fork):
            raise InvalidState(agent.id, agent.state, "resume a live agent (send it a message)")
        if not agent.session_id:
            raise InvalidState(agent.id, agent.state, "resume: it never started a Claude session")
        self.check_capacity()
        session_id = agent.session_id
        scenario = scenario_of(agent.spec.scenario)
        base_url = await self._model_url(scenario) if scenario else None
        now = time.time()
        events: list[Event]
        if fork:
            parent = agent
            agent = parent.with_changes(
                id=new_agent_id(),
                name=f"{parent.name}-fork",
                state=AgentState.STARTING,
                created_at=now,
                updated_at=now,
                session_id=None,
                cost_usd=0.0,
                input_tokens=0,
                output_tokens=0,
                turns=0,
                last_error=None,
                pid=None,
                owner_pid=os.getpid(),
                parent_id=None,  # a fork is a new agent of whoever asked for it
                extra={"forked_from": parent.id},
            )
            events = spawned_events(agent, reason=f"forked from {parent.id}")
        else:
            agent, events = _restarting(agent, "resume", now)
        reports = list(agent.extra.get("reports", []))
        if reports and not fork:
            # Answers that came while it was stopped: tell it first.
            agent = agent.with_changes(
                extra={k: v for k, v in agent.extra.items() if k != "reports"}
            )
            text = "\n".join([*reports, text or RESUME_PROMPT])
        await self.store.record(events, agent)
        return await self._launch(
            agent,
            None if idle and keep_alive and text is None else text or RESUME_PROMPT,
            base_url=base_url,
            keep_alive=keep_alive,
            resume=session_id,
            fork=fork,
        )

    async def relaunch(self, ref: str, *, keep_alive: bool = False) -> AgentSession:
        """A new process for an agent that was stopped before it had a Claude
        session (nothing to resume): it is given its first prompt again."""
        async with self._creation():
            return await self._relaunch(ref, keep_alive=keep_alive)

    async def _relaunch(self, ref: str, *, keep_alive: bool) -> AgentSession:
        agent = await self.store.find_agent(ref)
        if agent.session_id or agent.state.is_live or agent.source is not AgentSource.AGENTDECK:
            raise InvalidState(agent.id, agent.state, "start it afresh")
        prompt = self._prompts.get(agent.id)
        if prompt is None and agent.extra.get(PROMPT_REDACTED):
            # Never the redacted copy to the model as if it were the task: refused,
            # and said where the agent is looked at.
            refused = SecretNotKept(
                f"agent {agent.id}'s first prompt held a secret, which was not kept "
                "(only its redacted copy is stored, and this process did not start it): "
                "it cannot be given again",
                hint="start a new agent with the prompt",
            )
            now = time.time()
            said = f"{refused.message} ({refused.hint})"
            await self.store.record(
                [ErrorOccurred(agent_id=agent.id, ts=now, kind="prompt_not_kept", message=said)],
                agent.with_changes(last_error=said, updated_at=now),
            )
            raise refused
        self.check_capacity()
        scenario = scenario_of(agent.spec.scenario)
        base_url = await self._model_url(scenario) if scenario else None
        agent, events = _restarting(agent, "restart", time.time())
        await self.store.record(events, agent)
        return await self._launch(
            agent, prompt or agent.spec.prompt, base_url=base_url, keep_alive=keep_alive
        )

    async def _launch(
        self,
        agent: Agent,
        prompt: str | None,
        *,
        base_url: str | None,
        keep_alive: bool,
        resume: str | None = None,
        fork: bool = False,
        warm: Warm | None = None,
        new: bool = False,
    ) -> AgentSession:
        session = await self._prepare(
            agent,
            base_url=base_url,
            keep_alive=keep_alive,
            resume=resume,
            fork=fork,
            warm=warm,
            new=new,
        )
        try:
            await session.start(prompt)
        except BaseException:
            self.sessions.pop(agent.id, None)
            raise
        self._ensure_command_loop()
        return session

    async def _prepare(
        self,
        agent: Agent,
        *,
        base_url: str | None,
        keep_alive: bool,
        resume: str | None = None,
        fork: bool = False,
        warm: Warm | None = None,
        new: bool = False,
    ) -> AgentSession:
        """The agent's session, not started yet; refused (and the agent in error)
        when the fleet, its user or its project is over today's budget already.
        A ``new`` agent is recorded here, once its session is registered."""
        try:
            fleet = await self.daily.fleet(self.governor.profile_for(agent).budgets.daily_usd)
            scoped = await self.daily.scoped(agent)
        except BaseException:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=not new)
            raise
        checked = [b.check(time.time()) for b in ([fleet] if fleet else []) + list(scoped)]
        stop = next((s for s in checked if s is not None), None)
        if stop is not None:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=True)
            if new:
                await self.store.record(spawned_events(agent), agent)
            # Over today's cap already: spend nothing, say why.
            now = time.time()
            moved = transition(agent, AgentState.ERROR, ts=now, reason=stop.message)
            if moved.refused:
                logger.warning(REFUSALS.note(agent, AgentState.ERROR))
            said = ErrorOccurred(
                agent_id=agent.id, ts=now, kind=f"guardrail:{stop.kind}", message=stop.message
            )
            await self.store.record(
                [said, *moved.events],
                moved.agent.with_changes(last_error=stop.message, updated_at=now),
            )
            raise PolicyDenied(stop.message)
        session = self._session(
            agent,
            base_url=base_url,
            keep_alive=keep_alive,
            resume=resume,
            fork=fork,
            fleet=fleet,
            warm=warm,
            budgets=scoped,
        )
        if new:
            try:
                await self.store.record(spawned_events(agent), agent)
            except BaseException:
                self.sessions.pop(agent.id, None)
                if warm is not None:
                    self.warm.discard(warm, keep_cwd=False)
                raise
        return session

    def _session(
        self,
        agent: Agent,
        *,
        base_url: str | None,
        keep_alive: bool,
        resume: str | None = None,
        fork: bool = False,
        fleet: FleetBudget | None = None,
        warm: Warm | None = None,
        budgets: tuple[FleetBudget, ...] = (),
    ) -> AgentSession:
        session = AgentSession(
            agent,
            store=self.store,
            settings=self.settings,
            payloads=self.payloads,
            base_url=base_url,
            resume=resume,
            fork=fork,
            keep_alive=keep_alive,
            governor=self.governor,
            fleet=fleet,
            budgets=budgets,
            memory=self.memory,
            extension=self.extension,
            worktrees=self.worktrees,
            checkpoints=self.checkpoints if self.settings.checkpoints else None,
            start_slots=self.start_slots,
            warm=warm,
            warm_pool=self.warm,
        )
        if self._closing:  # created as the runner stops: it stops at its first step
            session.refuse_start(suspend=self._suspending)
        self.sessions[agent.id] = session
        return session

    @staticmethod
    async def _turn_over(session: AgentSession) -> None:
        """Until the agent's first turn is over: a Claude Code booting meanwhile
        would slow that turn down on a small machine."""
        ended = asyncio.ensure_future(session.turn_over.wait())
        gone = asyncio.ensure_future(session.finished.wait())
        try:
            await asyncio.wait({ended, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            gone.cancel()

    async def _prestart(self, template: AgentSpec) -> Warm | None:
        """A Claude Code process for the next agent of this template, under an id
        and a workspace reserved for it; nothing is recorded (None: the runner
        is closing). A profile that confines the whole process gets its
        confinement set up for that workspace, claimed with the process."""
        scenario = scenario_of(template.scenario)
        base_url = await self._model_url(scenario) if scenario else None
        agent_id = new_agent_id()
        cwd = self.settings.workspaces_dir / agent_id
        now = time.time()
        agent = Agent(
            id=agent_id,
            name="warm",
            state=AgentState.STARTING,
            spec=template,
            cwd=str(cwd),
            created_at=now,
            updated_at=now,
            source=AgentSource.AGENTDECK,
            owner_pid=os.getpid(),
        )
        if self._closing:
            return None
        session = AgentSession(
            agent,
            store=self.store,
            settings=self.settings,
            payloads=self.payloads,
            base_url=base_url,
            governor=self.governor,
            extension=self.extension,
        )
        # The workspace first: a confinement binds what exists when it is set up.
        cwd.mkdir(parents=True, exist_ok=False)
        try:
            session.sandboxing = await sandboxing.prepare(
                self.governor.profile_for(agent).sandbox,
                workspace=cwd,
                settings=self.settings,
                endpoint=base_url or self.settings.anthropic_base_url,
                on_blocked=lambda host, port: None,
            )
        except BaseException:
            shutil.rmtree(cwd, ignore_errors=True)
            raise
        # A confinement (its launcher, its network proxy) is bound to the reserved
        # workspace: it goes to the agent that claims the process.
        box = session.sandboxing
        try:
            # Its options as a session of its own would spawn it (its callbacks
            # unused: those of the agent that claims it answer the process).
            options = session.spawn_options()
            return await Warm.start(
                agent_id,
                cwd,
                template,
                options,
                sandboxing=box if box.confinement is not None else None,
            )
        except BaseException:
            shutil.rmtree(cwd, ignore_errors=True)
            await box.close()
            raise

    async def _worktree(self, agent_id: str, name: str, spec: AgentSpec) -> Worktree:
        """A worktree of the repository ``spec.cwd`` (or its project) is in, on a
        branch of its own."""
        source = spec.cwd or spec.project
        if not source:
            raise WorktreeError(
                "a worktree is made from a repository: give the agent a working directory in one",
                hint="pass --cwd DIR (the API: cwd)",
            )
        repo = Path(source).expanduser().resolve()
        if not repo.is_dir():
            raise UsageError(f"working directory {repo} does not exist")
        return await self.worktrees.create(agent_id, name, repo, spec.base)

    def _workspace(self, agent_id: str, spec: AgentSpec, scenario: Scenario | None) -> Path:
        if spec.cwd:
            cwd = Path(spec.cwd).expanduser().resolve()
            if not cwd.is_dir():
                raise UsageError(f"working directory {cwd} does not exist")
            return cwd
        cwd = self.settings.workspaces_dir / agent_id
        cwd.mkdir(parents=True, exist_ok=False)
        if scenario is not None:
            for rel, content in scenario.workspace_files.items():
                target = (cwd / rel).resolve()
                if not target.is_relative_to(cwd):
                    raise UsageError(f"scenario {scenario.name}: file {rel!r} leaves the workspace")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        return cwd

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
            await asyncio.sleep(self.settings.command_poll_seconds)

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
                procs.end_leftover, agent.pid, agent.updated_at, grace, agent.id
            )
            extra, reason = stopped_start(agent.extra, suspended=self._suspending)
            logger.warning("agent %s was still %s when the runner stopped", agent.id, agent.state)
            moved = transition(agent, AgentState.INTERRUPTED, ts=now, reason=reason)
            if moved.refused:
                logger.warning(REFUSALS.note(agent, AgentState.INTERRUPTED))
            await self.store.record(
                list(moved.events),
                moved.agent.with_changes(pid=None, current_tool=None, updated_at=now,
                                         last_error=reason, extra=extra),
            )  # fmt: skip
