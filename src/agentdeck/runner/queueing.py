"""Agents that wait for a runner host (a deck with runner hosts, issue 30 item 3).

On such a deck a new agent is not started by the process that was asked for it:
``queue`` records it ``queued`` (its spec, no workspace yet) and wakes the hosts;
the host that claims it (``runner.hosting``) starts it here with
``start_queued`` — its workspace made on that host, ``queued -> starting`` —, or
resumes it when it was queued again after its host was lost (``requeued``).

What goes through the database never holds a secret: a first prompt with one is
refused (the host that runs the agent reads the prompt from its row).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState, shown_prompt
from agentdeck.core.events import ErrorOccurred, Notice, spawned_events
from agentdeck.core.ids import new_agent_id
from agentdeck.core.lifecycle import REFUSALS, transition
from agentdeck.errors import SecretNotKept, WorktreeError
from agentdeck.runner import config_dirs, procs, transcripts
from agentdeck.runner.creation import default_name
from agentdeck.runner.restarts import AgentRestarts
from agentdeck.runner.scripted import scenario_of
from agentdeck.runner.session import AgentSession
from agentdeck.runner.warm import Warm, warmable
from agentdeck.store import listen

# Set on an agent queued again for a resume (its host was lost): ``busy`` says
# whether a turn was cut short (carried on) or it was idle (given its process back).
REQUEUED = "requeued"
# Set on an agent whose process is to end with its turn (``keep_alive`` off).
ONE_TURN = "one_turn"


class AgentQueueing(AgentRestarts):
    """Queues agents for runner hosts, and starts the ones this host claimed."""

    # This process's runner host name, once it runs as one (``runner.hosting``).
    host_name: str | None = None
    # New agents wait for a runner host instead of starting here (set by the
    # composition root for a daemon on a database with runner hosts).
    queueing: bool = False

    async def place(
        self,
        spec: AgentSpec,
        *,
        parent_id: str | None = None,
        keep_alive: bool = True,
        background: bool = False,
    ) -> Agent:
        """A new agent: queued for a runner host on a deck with hosts, else started
        here (``start``)."""
        if self.queueing:
            return await self.queue(spec, parent_id=parent_id, keep_alive=keep_alive)
        session = await self.start(
            spec, keep_alive=keep_alive, parent_id=parent_id, background=background
        )
        return session.agent

    async def queue(
        self, spec: AgentSpec, *, parent_id: str | None = None, keep_alive: bool = True
    ) -> Agent:
        """Record a new agent ``queued`` for a runner host that fits; it starts
        when one claims it."""
        if shown_prompt(spec.prompt) != spec.prompt:
            raise SecretNotKept(
                "the prompt holds a secret, and on a deck with runner hosts an agent's "
                "prompt reaches the host that runs it through the database, which never "
                "holds a secret: the agent was not started",
                hint="give the agent the secret another way (an environment variable of "
                "the runner host, a file in its workspace), or leave it out",
            )
        if spec.workspace == "worktree" and not (spec.cwd or spec.project):
            raise WorktreeError(
                "a worktree is made from a repository: give the agent a working directory in one",
                hint="pass --cwd DIR (the API: cwd)",
            )
        now = time.time()
        agent = Agent(
            id=new_agent_id(),
            name=spec.name or default_name(spec.prompt),
            state=AgentState.QUEUED,
            spec=spec,
            cwd=spec.cwd or "",
            created_at=now,
            updated_at=now,
            source=AgentSource.AGENTDECK,
            parent_id=parent_id,
            extra={} if keep_alive else {ONE_TURN: True},
        )
        await self.store.record(spawned_events(agent, reason="waiting for a runner host"), agent)
        await self.store.notify(listen.QUEUE, agent.id)
        return agent

    async def start_queued(self, agent: Agent) -> AgentSession:
        """Start a queued agent this host claimed (its lease is held and the store
        fenced on it by the caller): a fresh start, or a resume when it was queued
        again with a Claude session."""
        async with self._creation():
            requeued = agent.extra.get(REQUEUED)
            extra = {k: v for k, v in agent.extra.items() if k != REQUEUED}
            agent = agent.with_changes(extra=extra)
            if agent.session_id and isinstance(requeued, dict):
                agent = await self._reachable(agent)
                profile = self.governor.profile_for(agent)
                if not await transcripts.restore(self.store, self.settings, agent, profile):
                    return await self._over(agent)
                await self.store.save_agent(agent)
                busy = bool(requeued.get("busy"))
                return await self._resume(
                    agent.id, None, fork=False, keep_alive=True, idle=not busy
                )
            return await self._fresh(agent)

    async def _over(self, agent: Agent) -> AgentSession:
        """No transcript to resume from (its host was lost before one was kept):
        started over with its first prompt, saying so."""
        said = Notice(
            agent_id=agent.id,
            ts=time.time(),
            kind="started_over",
            message=f"its Claude session {agent.session_id} was not kept: "
            "started over with its first prompt",
        )
        await self.store.append([said])
        return await self._fresh(agent.with_changes(session_id=None))

    async def _reachable(self, agent: Agent) -> Agent:
        """A workspace of its own on the lost host's disk is not here: a new one is
        made (its files are not carried; its Claude session is)."""
        if agent.spec.cwd or Path(agent.cwd).is_dir():
            return agent
        cwd = self._workspace(agent.id, agent.spec, scenario_of(agent.spec.scenario))
        await self.store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="workspace",
                    message=f"its workspace {agent.cwd} is not on runner host "
                    f"{self.host_name}: resumed in a new one, {cwd}",
                )
            ]
        )
        return agent.with_changes(cwd=str(cwd))

    async def _fresh(self, agent: Agent) -> AgentSession:
        spec = agent.spec
        warm: Warm | None = None
        try:
            self.check_capacity(agent.id)
            scenario = scenario_of(spec.scenario)
            base_url = await self._model_url(scenario) if scenario else None
            extra: dict[str, Any] = dict(agent.extra)
            fits_warm = self._warmable_here(agent, bool(scenario and scenario.workspace_files))
            # A process this host started ahead for the template: the agent takes its
            # workspace, and its processes go on carrying the id it was started under.
            warm = self.warm.take(spec) if fits_warm else None
            extra.pop(procs.CARRIED, None)  # from a start that never began, if any
            if warm is not None:
                cwd, extra[procs.CARRIED] = warm.cwd, warm.agent_id
            elif spec.workspace == "worktree":
                worktree = await self._worktree(agent.id, agent.name, spec)
                cwd, extra["worktree"] = Path(worktree.path), worktree.to_dict()
            elif not spec.cwd and agent.cwd and Path(agent.cwd).is_dir():
                cwd = Path(agent.cwd)  # queued again before its session began
            else:
                cwd = self._workspace(agent.id, spec, scenario)
        except Exception as exc:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=False)
            await self._failed_to_place(agent, exc)
            raise
        now = time.time()
        moved = transition(agent, AgentState.STARTING, ts=now, reason=f"on host {self.host_name}")
        started = moved.agent.with_changes(
            cwd=str(cwd), owner_pid=os.getpid(), updated_at=now, extra=extra
        )
        try:
            await self.store.record(list(moved.events), started)
        except BaseException:
            if warm is not None:
                self.warm.discard(warm, keep_cwd=False)
            raise
        keep_alive = not agent.extra.get(ONE_TURN)
        session = await self._launch(
            started, spec.prompt, base_url=base_url, keep_alive=keep_alive, warm=warm
        )
        if fits_warm:  # the next agent of its template finds a process waiting
            self.warm.fill(spec, self._prestart, after=self._turn_over(session))
        return session

    def _warmable_here(self, agent: Agent, workspace_files: bool) -> bool:
        """Whether a warm process can be its: a new empty workspace, its own config
        directory not isolated (that directory is named after the agent's id)."""
        spec = agent.spec
        if not warmable(spec, workspace_files):
            return False
        return not config_dirs.is_isolated(spec, self.governor.profile_for(agent))

    async def _failed_to_place(self, agent: Agent, exc: Exception) -> None:
        """The claimed agent could not be given a workspace here: it fails, saying why."""
        now = time.time()
        message = f"runner host {self.host_name} could not start it: {exc}"
        moved = transition(agent, AgentState.ERROR, ts=now, reason=message)
        if moved.refused:
            REFUSALS.note(agent, AgentState.ERROR)
            return
        await self.store.record(
            [
                ErrorOccurred(agent_id=agent.id, ts=now, kind="placement", message=message),
                *moved.events,
            ],
            moved.agent.with_changes(last_error=message, updated_at=now),
        )
