"""What every platform's bridge reads from the settings: a secret (from the
environment or a file only its owner can read, never logged, never in an error
message) and the core's configuration (the shared ``AGENTDECK_BRIDGE_*`` settings
and the platform's own allow-list of channels)."""

from __future__ import annotations

import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from agentdeck.bridges.delivery import Retry
from agentdeck.bridges.host import BridgeConfig
from agentdeck.errors import ConfigError
from agentdeck.settings import Settings


def read_secret(value: SecretStr | None, path: Path | None, *, what: str, var: str) -> str:
    """``what`` (e.g. "Discord bot token") from ``var``'s value, else from the file
    ``var``_FILE names, which only its owner may read (mode 0600)."""
    if value is not None and value.get_secret_value().strip():
        return value.get_secret_value().strip()
    if path is None:
        raise ConfigError(
            f"no {what}", hint=f"set {var}, or {var}_FILE to a file of mode 0600 that holds it"
        )
    path = path.expanduser()
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"the {what} file {path} may be read by others "
                f"(mode {stat.S_IMODE(mode):o}); the bridge refuses it",
                hint=f"chmod 600 {path}",
            )
        secret = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} file {path}: {exc.strerror}") from None
    if not secret:
        raise ConfigError(f"the {what} file {path} is empty")
    return secret


def bridge_config(settings: Settings, channels: Iterable[object]) -> BridgeConfig:
    """The core's configuration: the shared bridge settings, and ``channels``, the
    platform's allow-list."""
    agent: dict[str, Any] = {}
    if settings.bridge_project is not None:
        agent["cwd"] = str(settings.bridge_project.expanduser())
    if settings.bridge_profile:
        agent["profile"] = settings.bridge_profile
    if settings.bridge_scenario:
        agent["scenario"] = settings.bridge_scenario
    return BridgeConfig(
        channels=frozenset(str(c) for c in channels),
        approvers=frozenset(settings.bridge_approvers),
        admins=frozenset(settings.bridge_admins),
        project_roots=tuple(str(p) for p in settings.bridge_project_roots),
        on_busy=settings.bridge_on_busy,
        edit_interval=settings.bridge_edit_interval_seconds,
        attach_over=settings.bridge_attach_over,
        agent=agent,
        template=settings.bridge_template or None,
        retry=Retry(max_delay=settings.bridge_retry_max_seconds),
    )
