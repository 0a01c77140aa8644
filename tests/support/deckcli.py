"""Run the ``agentdeck`` command as a user would: a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def deck_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTDECK_", "ANTHROPIC_"))}
    env.update(
        AGENTDECK_HOME=str(tmp_path / "home"),
        AGENTDECK_CLAUDE_CONFIG_DIR=str(tmp_path / "claude-config"),
        AGENTDECK_MAX_RETRIES="1",
        AGENTDECK_STOP_GRACE_SECONDS="1",
        AGENTDECK_COMMAND_POLL_SECONDS="0.05",
        AGENTDECK_PORT="0",
        AGENTDECK_WARM_POOL="0",  # no extra Claude Codes unless a test asks
        COLUMNS="200",
    )
    env.update(extra)
    return env


def deck_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentdeck", *args]


def deck(env: dict[str, str], *args: str, timeout: float = 120) -> Done:
    proc = subprocess.run(
        deck_argv(*args),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Done(proc.returncode, proc.stdout, proc.stderr)


def spawn(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        deck_argv(*args),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
