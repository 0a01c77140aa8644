"""Processes started ahead for a runner's agents: the warm pool's, and an
embedded run's early one (``cli.early``), which the runner adopts. Both are
spawned by the one spawn pipeline (``runner.spawn``); the agent that claims one
adopts its process in its session (``AgentSession._client_for``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING

from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.ids import new_agent_id
from agentdeck.runner import endpoints
from agentdeck.runner.runner_base import RunnerBase
from agentdeck.runner.scripted import scenario_of
from agentdeck.runner.session import AgentSession
from agentdeck.runner.spawn import spawn_ahead
from agentdeck.runner.warm import Warm

if TYPE_CHECKING:  # the scripted model loads only for --scenario runs
    from agentdeck.mockmodel import MockModel

logger = logging.getLogger(__name__)


class RunnerWarm(RunnerBase):
    """Adopts processes started before it, and starts the next ones ahead."""

    def adopt(self, warm: Warm, model: MockModel | None = None) -> None:
        """A Claude Code process started before this runner (an embedded run's,
        ``cli.early``), offered to the next agent of its template as the warm
        pool's are; with the scripted model it was pointed at, served as this
        runner's own for its scenarios."""
        if model is not None:
            self.models.adopt(model)
        self.warm.add(warm)

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
        now = time.time()
        agent = Agent(
            id=agent_id,
            name="warm",
            state=AgentState.STARTING,
            spec=template,
            cwd=str(self.settings.workspaces_dir / agent_id),
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
        # Its options as a session of its own would spawn it (its callbacks
        # unused: those of the agent that claims it answer the process).
        profile = self.governor.profile_for(agent)
        return await spawn_ahead(
            agent_id,
            template,
            settings=self.settings,
            sandbox=profile.sandbox,
            # Its confinement lets its model through: the scripted one, its endpoint's.
            base_url=base_url or endpoints.model_url(template, profile, self.settings),
            options_for=lambda _workspace: session.spawn_options(),
        )
