"""A session's sandbox, from its profile's ``sandbox`` block.

- ``process``: the whole Claude Code process runs confined (``sandbox/``): the
  SDK is given a launcher instead of the Claude Code binary, and the proxy
  settings for inside.
- ``bash``: Claude Code sandboxes its Bash commands itself: its ``sandbox``
  settings, mapped from the profile, are passed with ``--settings``.
- A profile that asks for a sandbox this machine cannot give: with ``required``
  the agent does not start (``SandboxUnavailable``, one line saying what is
  missing and how to install it); without, it runs unsandboxed and says so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.core.events import Event, SandboxBlocked, ToolReturned
from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec, absolute, blocked_writes
from agentdeck.errors import SandboxUnavailable
from agentdeck.sandbox.confine import Confinement, endpoint_of
from agentdeck.sandbox.support import support
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from claude_agent_sdk.types import ClaudeAgentOptions

logger = logging.getLogger(__name__)
ROOT_BASH_NOTICE = (
    "the profile asks for Claude Code's own Bash sandbox, which keeps root's capabilities "
    "when agentdeck runs as root: the whole process runs in agentdeck's sandbox instead"
)


@dataclass
class Sandboxing:
    """What a session does about its sandbox."""

    label: str  # what the board shows: process, bash, off, unavailable
    confinement: Confinement | None = None
    claude_settings: str | None = None  # --settings JSON, for bash mode
    notice: str | None = None  # said in the agent's log

    def apply(self, options: ClaudeAgentOptions) -> None:
        """The process as its sandbox has it: launched through the confinement,
        or with Claude Code's own Bash sandbox in its settings."""
        if self.confinement is not None:
            options.cli_path = self.confinement.write_launcher(str(options.cli_path))
            options.env = {**options.env, **self.confinement.env()}
        if self.claude_settings is not None:  # over the template's (its hooks)
            own = json.loads(options.settings) if options.settings else {}
            options.settings = json.dumps({**own, **json.loads(self.claude_settings)})

    async def close(self) -> None:
        if self.confinement is not None:
            await self.confinement.close()
            self.confinement = None


async def given(
    spec: SandboxSpec, *, whole_process: bool = False, profile: str | None = None
) -> tuple[SandboxSpec | None, str | None]:
    """The sandbox this machine gives for ``spec`` (``whole_process``: in process
    mode whatever the profile's mode), and a notice for the log: ``None`` and why,
    when it cannot be given and the profile does not require it. As root, Claude
    Code's own Bash sandbox runs each command as uid 0 with every capability root
    has (no sandbox): the whole process is confined instead, with a notice.
    Raises ``SandboxUnavailable`` when a required sandbox cannot be given."""
    notice = None
    if whole_process:
        spec = replace(spec, mode=SandboxMode.PROCESS)
    elif spec.mode is SandboxMode.BASH and os.geteuid() == 0:
        spec, notice = replace(spec, mode=SandboxMode.PROCESS), ROOT_BASH_NOTICE
    found = await asyncio.to_thread(support, spec.mode)
    if found.ok:
        return spec, notice
    whose = f"the profile {profile!r}" if profile else "the profile"
    message = (
        f"{whose} asks for a {spec.mode} sandbox, which this machine cannot give: {found.detail}"
    )
    if spec.required:
        raise SandboxUnavailable(message)
    return None, f"{message}; running unsandboxed (not required)"


async def prepare(
    spec: SandboxSpec,
    *,
    workspace: Path,
    settings: Settings,
    endpoint: str | None,
    on_blocked: Callable[[str, int], None],
) -> Sandboxing:
    """Confine a session as its profile asks, or say why not."""
    if not spec.enabled:
        return Sandboxing("off")
    boxed, notice = await given(spec)
    if boxed is None:
        return Sandboxing("unavailable", notice=notice)
    if boxed.mode is SandboxMode.BASH:
        return Sandboxing(
            "bash",
            claude_settings=json.dumps(
                {
                    "sandbox": claude_sandbox(
                        boxed, workspace=workspace, settings=settings, endpoint=endpoint
                    )
                }
            ),
        )
    confinement = await Confinement.open(
        boxed, workspace=workspace, settings=settings, endpoint=endpoint, on_blocked=on_blocked
    )
    return Sandboxing("process", confinement=confinement, notice=notice)


def claude_sandbox(
    spec: SandboxSpec, *, workspace: Path, settings: Settings, endpoint: str | None
) -> dict[str, Any]:
    """Claude Code's own ``sandbox`` settings for Bash commands, from the profile:
    commands never leave it (no unsandboxed escape hatch), and agentdeck's policy
    still decides each command (no auto-allow)."""
    ws, home = str(workspace), str(Path.home())
    host, port, _ = endpoint_of(endpoint or settings.anthropic_base_url)
    domains = list(spec.allowed_domains) if spec.network is NetworkMode.ALLOWLIST else []
    network: dict[str, Any] = {}
    if spec.network is not NetworkMode.OPEN:
        network["allowedDomains"] = list(dict.fromkeys([*domains, host]))
    return {
        "enabled": True,
        "failIfUnavailable": spec.required,
        "autoAllowBashIfSandboxed": False,
        "allowUnsandboxedCommands": False,
        "filesystem": {
            "allowWrite": [absolute(p, workspace=ws, home=home) for p in spec.allow_write],
            "denyWrite": [absolute(p, workspace=ws, home=home) for p in spec.deny_write],
            "denyRead": [
                *(absolute(p, workspace=ws, home=home) for p in spec.deny_read),
                str(settings.home_dir),
            ],
            "allowRead": [ws],  # its workspace may sit in agentdeck's home
        },
        "network": network,
    }


def blocked_write_events(agent_id: str, events: Sequence[Event]) -> list[Event]:
    """A tool whose output says the file system was read-only hit the sandbox:
    each path becomes an event (the transcript and the feed show it)."""
    return [
        SandboxBlocked(
            agent_id=agent_id,
            ts=event.ts,
            what="write",
            target=path,
            detail="outside the places the profile lets it write",
        )
        for event in events
        if isinstance(event, ToolReturned)
        for path in blocked_writes(event.output)
    ]
