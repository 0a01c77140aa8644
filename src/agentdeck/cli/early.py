"""An embedded ``agentdeck run``'s Claude Code, spawned before the store is open.

Without a daemon, ``agentdeck run`` used to import the store and the runner,
open and migrate the store, record the agent, and only then spawn Claude Code,
whose boot (~0.8 s) waited for all of it. Here it is spawned as soon as the SDK
is imported, for the agent the run is about to create: under an agent id and a
new empty workspace reserved for it, with the options a session would give it,
exactly as the daemon's warm pool starts one (``runner.warm``). The rest loads
while it boots. The runner is then handed the process (``Runner.adopt``) and
its agent takes it only if the command line, environment and directory a cold
start would give now are exactly those it was spawned with (``Warm.fits``);
otherwise the process is stopped and the agent starts cold. What Claude Code
learns after spawn (the callbacks, hooks, the deck's tools, the prompt) comes
from the agent's own session, as for any warm process.

Its workspace, sandbox and spawn go through the one spawn pipeline the warm
pool uses too (``runner.spawn``). Only the SDK, the options and the sandbox are
loaded here: no store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claude_agent_sdk.types import ClaudeAgentOptions, PermissionResultDeny, ToolPermissionContext

from agentdeck.core.agent import AgentSpec
from agentdeck.core.ids import new_agent_id
from agentdeck.governance.profiles import load_profile
from agentdeck.orchestration.deck_server import SERVER, spawn_config
from agentdeck.runner.options import build_options
from agentdeck.runner.spawn import spawn_ahead
from agentdeck.runner.warm import StderrSink, Warm, template_of, warmable
from agentdeck.settings import Settings
from agentdeck.telemetry.claude_env import claude_env

if TYPE_CHECKING:
    from agentdeck.mockmodel import MockModel

logger = logging.getLogger(__name__)


@dataclass
class Early:
    """A Claude Code process booting for the run's agent, and the scripted model
    it was pointed at (``--scenario``); the runner's once ``Runner.adopt`` has them."""

    warm: Warm
    model: MockModel | None = None

    async def close(self) -> None:
        """Never handed to a runner: its process tree, workspace, sandbox and model go."""
        try:
            await self.warm.stop()
        finally:
            if self.model is not None:
                await self.model.stop()


async def _unused(tool: str, _input: dict[str, Any], _ctx: ToolPermissionContext) -> Any:
    # Set only so that the command line asks for permission prompts on stdio, as a
    # session's does; the adopting session's own callback answers the process.
    return PermissionResultDeny(message="not this process's agent")  # pragma: no cover


async def spawn(settings: Settings, spec: AgentSpec) -> Early | None:
    """Claude Code spawned for ``spec``'s agent, if it would start in a new empty
    workspace (as a warm process does); None otherwise, or when anything here
    fails (the agent then starts cold, and says why if it cannot)."""
    if not warmable(spec, workspace_files=False):
        return None
    model: MockModel | None = None
    base_url: str | None = None
    try:
        if spec.scenario:
            from agentdeck.mockmodel import MockModel, builtin_scenario_path, load_scenario

            scenario = load_scenario(builtin_scenario_path(spec.scenario))
            if scenario.workspace_files:  # the workspace would not be empty
                return None
            model = MockModel([scenario], host="127.0.0.1", port=0)
            await model.start()
            base_url = model.url_for(scenario.name)
        from agentdeck.runner.endpoints import model_url

        profile = load_profile(spec.profile or settings.profile)
        template = template_of(spec)
        agent_id = new_agent_id()
        settings.ensure_home()  # made private (0700) if new, as the store's opening does

        def options_for(workspace: Path) -> ClaudeAgentOptions:
            return build_options(
                template,
                settings=settings,
                cwd=workspace,
                can_use_tool=_unused,
                stderr=StderrSink(),
                agent_id=agent_id,
                base_url=base_url,
                mcp_servers={SERVER: spawn_config(settings)},
                # A root agent: its trace is its own (as its session will say).
                extra_env=claude_env(settings, agent_id, root_id=agent_id),
            )

        # The daemon's warm pool spawns through the same pipeline (``runner.spawn``).
        warm = await spawn_ahead(
            agent_id,
            template,
            settings=settings,
            sandbox=profile.sandbox,
            # Its confinement lets its model through: the scripted one, its endpoint's.
            base_url=base_url or model_url(template, profile, settings),
            options_for=options_for,
        )
    except BaseException as exc:
        if model is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(model.stop())
        if not isinstance(exc, Exception):
            raise  # Ctrl-C: nothing left behind
        logger.info("no early start (the agent starts cold): %s", exc)
        return None
    return Early(warm, model)
