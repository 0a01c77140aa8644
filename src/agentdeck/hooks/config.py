"""What the hook client is told: its deadline and its fallbacks.

The client is started by Claude Code for every hook event and must stay tiny,
so it cannot read the settings. The installer and the daemon write what it
needs into ``AGENTDECK_HOME/hooks.json``; a missing or broken file means the
defaults below (the client carries the same defaults).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentdeck.errors import ConfigError
from agentdeck.files import atomic_write
from agentdeck.settings import Settings

if TYPE_CHECKING:  # the CLI imports this at every start; the policy engine is not needed
    from agentdeck.core.policy import Decision

FALLBACK_ACTIONS = ("pass", "ask", "deny")

# Hook events agentdeck installs itself for. Notification does not fire in
# headless runs, but it does in a terminal.
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "Notification",
)


def fallbacks(settings: Settings, profile_default: Decision) -> dict[str, str]:
    """Per event, what to do without a daemon. Every event passes silently, so
    Claude Code applies its own permission rules and prompt exactly as without
    agentdeck; under full governance (``AGENTDECK_HOOK_GOVERNANCE=full``) and a
    deny-by-default profile, PreToolUse denies, as the daemon would. ("ask"
    would prompt for every Read in a terminal and deny every tool in ``-p``
    mode.) Under ``deny-and-ask`` the daemon leaves unmatched calls to Claude
    Code, so the client does too when there is no daemon."""
    out = dict.fromkeys(HOOK_EVENTS, "pass")
    full = settings.hook_governance == "full"
    out["PreToolUse"] = "deny" if full and profile_default == "deny" else "pass"
    for event, action in settings.hook_fallbacks.items():
        if action not in FALLBACK_ACTIONS:
            raise ConfigError(
                f"hook fallback for {event} is {action!r}",
                hint=f"AGENTDECK_HOOK_FALLBACKS values are one of {', '.join(FALLBACK_ACTIONS)}",
            )
        out[event] = action
    return out


def client_config(settings: Settings, profile_default: Decision) -> dict[str, Any]:
    return {
        "socket": str(settings.socket_path),
        "deadline": settings.hook_deadline_seconds,
        "fallbacks": fallbacks(settings, profile_default),
    }


def write_client_config(settings: Settings, profile_default: Decision) -> Path:
    """Write ``hooks.json`` atomically (the client may read it at any moment)."""
    path = settings.hooks_config_path
    atomic_write(path, json.dumps(client_config(settings, profile_default), indent=2) + "\n")
    return path
