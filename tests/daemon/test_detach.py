"""``agentdeck up --detach``: what the terminal that starts the daemon loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli

# What the daemon itself loads; the parent only starts it and prints where it is.
SERVER_MODULES = (
    "agentdeck.serve",
    "agentdeck.daemon.server",
    "agentdeck.daemon.deck",
    "agentdeck.web.app",
    "agentdeck.runner.runner",
    "agentdeck.store.store",
    "fastapi",
    "uvicorn",
)


def test_the_parent_of_a_detached_daemon_does_not_import_the_server(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    started = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agentdeck", "up", "--detach"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        token = (Path(env["AGENTDECK_HOME"]) / "token").read_text().strip()
        assert f"/login?token={token}" in started.stdout  # the banner, with its link
    finally:
        assert deck(env, "down", timeout=60).code == 0
    imported = {
        line.split("|")[-1].strip()
        for line in started.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "agentdeck.daemon.home" in imported  # the list is the parent's imports
    loaded = sorted(m for m in imported if m.startswith(SERVER_MODULES))
    assert loaded == []
