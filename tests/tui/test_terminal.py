"""``agentdeck tui`` in a real terminal (tmux): a daemon started for it, drawn, live,
quit with a key."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.deckcli import deck, deck_argv, deck_env
from tests.support.tmux import Tmux
from tests.support.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.cli,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (make terminal)"),
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**deck_env(tmp_path), "TERM": "xterm-256color"}


@pytest.fixture
def daemon_down(env: dict[str, str]) -> Iterator[None]:
    """Whatever daemon the test's TUI started is stopped at the end."""
    yield
    stopped = deck(env, "down")
    assert stopped.code == 0, stopped.err


async def test_the_tui_in_tmux_starts_a_daemon_shows_agents_live_and_quits_on_q(
    env: dict[str, str], tmux: Tmux, daemon_down: None
) -> None:
    # No daemon runs: `agentdeck tui` starts one in the background, then draws.
    command = " ".join(deck_argv("tui"))
    started = tmux("new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", command)
    assert started.returncode == 0, started.stderr

    async def drawn() -> str | None:
        screen = tmux.screen("tui")
        return screen if "● live" in screen and "q quit" in screen else None

    await eventually(drawn, timeout=60, what="the TUI drawn and live")
    home = Path(env["AGENTDECK_HOME"])
    info = json.loads((home / "daemon.json").read_text())
    api = httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{info['port']}",
        headers={"Authorization": f"Bearer {(home / 'token').read_text().strip()}"},
        timeout=30,
    )
    async with api:
        created = await api.post(
            "/api/agents", json={"prompt": "hi", "name": "chatty", "scenario": "chat"}
        )
        assert created.status_code == 201, created.text

    async def row() -> bool:
        lines = tmux.screen("tui").splitlines()
        return any("chatty" in line and "idle" in line for line in lines)

    await eventually(row, timeout=60, what="the agent's row, idle after its turn")

    async def transcript() -> bool:
        return "Hello! I am the scripted model." in tmux.screen("tui")

    await eventually(transcript, timeout=30, what="its transcript")
    tmux("send-keys", "-t", "tui", "q")

    async def gone() -> bool:
        return tmux("has-session", "-t", "tui").returncode != 0

    await eventually(gone, timeout=30, what="the TUI to quit")
