"""A terminal for end-to-end tests of what agentdeck draws on one: a tmux server
of the test's own (``-L``), with the test's environment, killed afterwards.
Tests that take it skip without tmux (``make terminal`` installs it)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class Tmux:
    """One tmux server of the test's own (``-L``), with the test's environment."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.socket = f"agentdeck-test-{tmp_path.name}"
        self.env = env

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    def screen(self, session: str, *, history: int = 0) -> str:
        """What ``session``'s pane shows (with ``history`` lines scrolled off above,
        wrapped lines joined)."""
        if history:
            return self("capture-pane", "-p", "-J", "-S", f"-{history}", "-t", session).stdout
        return self("capture-pane", "-p", "-t", session).stdout


@pytest.fixture
def tmux(tmp_path: Path, env: dict[str, str]) -> Iterator[Tmux]:
    """The test's tmux server (needs the test module's ``env`` fixture)."""
    server = Tmux(tmp_path, env)
    yield server
    server("kill-server")
