"""A new agent: its workspace, its row, its session, its start.

Every start (new, resumed, relaunched) ends in ``_launch``/``_prepare``: the
day's budgets are checked, the session is registered before the row is
recorded (a steering command that finds the row finds the session), and the
session starts (in the background when asked).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
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
from agentdeck.core.events import ErrorOccurred, spawned_events
from agentdeck.core.guardrails import FleetBudget
from agentdeck.core.ids import new_agent_id
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.core.worktree import Worktree
from agentdeck.errors import PolicyDenied, UsageError, WorktreeError
from agentdeck.runner.extension import SessionExtension
from agentdeck.runner.scripted import scenario_of
from agentdeck.runner.session import AgentSession
from agentdeck.runner.warm import Warm, warmable
from agentdeck.runner.warm_starts import RunnerWarm

if TYPE_CHECKING:  # the scripted model loads only for --scenario runs
    from agentdeck.mockmodel import Scenario

logger = logging.getLogger(__name__)


def default_name(prompt: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", prompt.lower())[:4]
    return "-".join(words) or "agent"


class AgentCreation(RunnerWarm):
    """Creates agents and starts their sessions."""

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
        self.check_capacity(agent_id)  # counted from now: no await since the check above
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
        recorded = await self._recorded(agent, base_url, warm)
        if recorded is not None and warm is not None:
            # Started ahead, inside a sandbox that lets it reach its model, not the proxy.
            self.warm.discard(warm, keep_cwd=True)
            warm = None
        session = self._session(
            agent,
            base_url=base_url,
            keep_alive=keep_alive,
            resume=resume,
            fork=fork,
            fleet=fleet,
            warm=warm,
            budgets=scoped,
            extension=recorded,
        )
        if recorded is not None:  # its cassette ends with its session
            self.recorder.follow(agent.id, session.finished, lambda: str(session.agent.state))
        if new:
            try:
                await self.store.record(spawned_events(agent), agent)
            except BaseException:
                self.sessions.pop(agent.id, None)
                if warm is not None:
                    self.warm.discard(warm, keep_cwd=False)
                raise
        return session

    async def _recorded(
        self, agent: Agent, base_url: str | None, warm: Warm | None
    ) -> SessionExtension | None:
        """A recorded agent's extension (its model traffic through the recording
        proxy: runner.recording); None for an agent that is not recorded."""
        from agentdeck.runner.recording.seam import recorded

        try:
            return await recorded(
                self.recorder,
                agent,
                base_url=base_url,
                profile=self.governor.profile_for(agent),
                inner=self.extension,
                checkpoints=self.checkpoints if self.settings.checkpoints else None,
            )
        except BaseException:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=True)
            raise

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
        extension: SessionExtension | None = None,
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
            extension=extension or self.extension,
            worktrees=self.worktrees,
            checkpoints=self.checkpoints if self.settings.checkpoints else None,
            start_slots=self.start_slots,
            warm=warm,
            warm_pool=self.warm,
        )
        session.partials = self.partials
        if self._closing:  # created as the runner stops: it stops at its first step
            session.refuse_start(suspend=self._suspending)
        self.sessions[agent.id] = session
        self._starting.pop(agent.id, None)  # counted as its session from now
        return session

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
