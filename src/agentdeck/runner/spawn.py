"""The one spawn pipeline for a Claude Code process started ahead of its agent.

The daemon's warm pool (``Runner._prestart``) and an embedded run's early start
(``cli.early``) start Claude Code the same way, here: a new empty workspace
reserved for an agent id, the profile's sandbox prepared for that workspace,
the options the caller gives (those a session of the agent would spawn with),
the sandbox applied to them, and the process spawned (``Warm.start``). What
fails on the way leaves nothing behind: the sandbox is closed and the workspace
removed. The agent that claims the process adopts it only if a cold start would
spawn exactly this one (``Warm.fits``).

Only the sandbox and the warm process are loaded here (``cli.early`` imports it
before the store is open): no store, no session.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentdeck.core.agent import AgentSpec
from agentdeck.core.sandbox import SandboxSpec
from agentdeck.runner import sandboxing
from agentdeck.runner.warm import Warm
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from claude_agent_sdk.types import ClaudeAgentOptions


def _unclaimed(host: str, port: int) -> None:
    """A refusal of the sandbox's proxy before an agent claims the process: its
    confinement is rebound to the agent's log then (``Warm.take_sandboxing``)."""


async def spawn_ahead(
    agent_id: str,
    template: AgentSpec,
    *,
    settings: Settings,
    sandbox: SandboxSpec,
    base_url: str | None,
    options_for: Callable[[Path], ClaudeAgentOptions],
) -> Warm:
    """Claude Code spawned for the next agent of ``template``, under ``agent_id``
    and a new empty workspace reserved for it (``settings.workspaces_dir``), with
    the options ``options_for(workspace)`` gives, confined as ``sandbox`` asks. A
    confinement of the whole process is bound to the workspace: it goes with the
    process to the agent that claims it. Raises what failed, having removed what
    it made."""
    cwd = settings.workspaces_dir / agent_id
    # The workspace first: a confinement binds what exists when it is set up.
    cwd.mkdir(parents=True, exist_ok=False)
    box: sandboxing.Sandboxing | None = None
    try:
        box = await sandboxing.prepare(
            sandbox,
            workspace=cwd,
            settings=settings,
            endpoint=base_url or settings.anthropic_base_url,
            on_blocked=_unclaimed,
        )
        options = options_for(cwd)
        box.apply(options)
        return await Warm.start(
            agent_id,
            cwd,
            template,
            options,
            sandboxing=box if box.confinement is not None else None,
        )
    except BaseException:
        if box is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(box.close())
        shutil.rmtree(cwd, ignore_errors=True)
        raise
