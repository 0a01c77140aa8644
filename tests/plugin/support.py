"""The plugin as Claude Code users get it: the bundled CLI, an isolated config
directory and HOME (never the user's own ~/.claude), and the plugin's launchers
run as Claude Code runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.mockmodel import claude_cli_path, cli_env

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugin" / "agentdeck"
SCRIPTS = PLUGIN / "scripts"
MCP_PREFIX = "mcp__plugin_agentdeck_agentdeck__"  # Claude Code's name for the plugin's server
# The directory of the `agentdeck` command this suite runs: the plugin finds it on PATH.
DECK_BIN = Path(sys.executable).parent


def manifest(*parts: str) -> Any:
    return json.loads(PLUGIN.joinpath(*parts).read_text())


def claude_env(tmp: Path, base_url: str = "http://127.0.0.1:9", **extra: str) -> dict[str, str]:
    """An isolated Claude Code: its own HOME and CLAUDE_CONFIG_DIR, `agentdeck` on PATH,
    no AGENTDECK_* of the caller's."""
    env = cli_env(tmp / "user", base_url, CLAUDE_CONFIG_DIR=str(tmp / "claude"))
    env = {k: v for k, v in env.items() if not k.startswith("AGENTDECK_")}
    env["PATH"] = f"{DECK_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def claude(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One bundled-CLI command (not a session), to its end."""
    cli = claude_cli_path()
    assert cli is not None, "the bundled Claude Code CLI is missing"
    return subprocess.run(
        [str(cli), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def install(env: dict[str, str], cwd: Path, **config: str) -> None:
    """What the README says: add this repository as a marketplace, install the plugin."""
    added = claude(env, "plugin", "marketplace", "add", str(REPO), cwd=cwd)
    assert added.returncode == 0, added.stdout + added.stderr
    options = [a for k, v in config.items() for a in ("--config", f"{k}={v}")]
    done = claude(env, "plugin", "install", "agentdeck@agentdeck", *options, cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr


def launch(
    script: str, env: dict[str, str], stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One of the plugin's launchers, as Claude Code starts it (by its path, no shell)."""
    return subprocess.run(
        [str(SCRIPTS / script)],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
