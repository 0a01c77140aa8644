"""How a recorded agent's session is pointed at the proxy: through the runner's
extension seam, whose environment is the last word on the Claude Code process's
(``ANTHROPIC_BASE_URL``); everything else is the wrapped extension's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.agent import Agent
from agentdeck.core.ask_choices import ChoiceQuestion
from agentdeck.core.asks import Ask, AskKind, AskState
from agentdeck.core.guardrails import SharedBudget
from agentdeck.runner import endpoints
from agentdeck.runner.extension import SessionExtension
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.core.policy_profile import Profile
    from agentdeck.runner.recording.service import Recorder
    from agentdeck.worktrees.checkpoints import Checkpoints


class RecordedExtension:
    """``inner`` with the agent's model traffic routed through ``url``."""

    def __init__(
        self, inner: SessionExtension | None, url: str, direct: dict[str, str] | None = None
    ) -> None:
        self.inner = inner
        self.url = url
        self.direct = direct or {}  # NO_PROXY past a proxy it is told of (Recorder.direct_env)

    def mcp_servers(self, agent: Agent) -> dict[str, Any]:
        return self.inner.mcp_servers(agent) if self.inner else {}

    def env(self, agent: Agent) -> dict[str, str]:
        own = self.inner.env(agent) if self.inner else {}
        return {**own, **self.direct, "ANTHROPIC_BASE_URL": self.url}

    async def budget(self, agent: Agent) -> SharedBudget | None:
        return await self.inner.budget(agent) if self.inner else None

    async def before_send(self, agent: Agent, text: str) -> str:
        return await self.inner.before_send(agent, text) if self.inner else text

    async def ask_user(self, agent: Agent, questions: tuple[ChoiceQuestion, ...]) -> Ask:
        if self.inner is not None:
            return await self.inner.ask_user(agent, questions)
        now = time.time()  # nobody to ask here, as without the proxy
        return Ask(
            id="none",
            kind=AskKind.QUESTION,
            agent_id=agent.id,
            to_agent_id=None,
            text="",
            state=AskState.CANCELLED,
            created_at=now,
            expires_at=now,
        )


def recording_endpoint(extension: SessionExtension | None) -> str | None:
    """The proxy's URL when the session is recorded: its sandbox lets the process
    reach that, not the upstream (which the proxy reaches, outside it)."""
    return extension.url if isinstance(extension, RecordedExtension) else None


def upstream_of(
    agent: Agent, base_url: str | None, profile: Profile | None, settings: Settings
) -> str:
    """Where the agent's requests would go without the proxy."""
    from agentdeck.runner.recording.service import DEFAULT_UPSTREAM

    return (
        base_url
        or endpoints.model_url(agent.spec, profile, settings)
        or settings.anthropic_base_url
        or DEFAULT_UPSTREAM
    )


async def recorded(
    recorder: Recorder,
    agent: Agent,
    *,
    base_url: str | None,
    profile: Profile | None,
    inner: SessionExtension | None,
    checkpoints: Checkpoints | None,
) -> RecordedExtension | None:
    """The extension of a recorded agent's session (None: it is not recorded): its
    route opened, its start state kept when its cassette begins."""
    from agentdeck.runner.recording.service import mode_for, start_state

    mode = mode_for(agent.spec, recorder.settings)
    if mode is None:
        return None
    cwd = Path(agent.cwd)
    snap = (
        (lambda: checkpoints.snapshot(agent.id, cwd, summary="recording start"))
        if checkpoints is not None and cwd.is_dir()
        else None
    )
    upstream = upstream_of(agent, base_url, profile, recorder.settings)
    url = await recorder.open(agent.id, upstream, mode, lambda: start_state(cwd, snap))
    return RecordedExtension(inner, url, recorder.direct_env(url))
