"""``agentdeck run`` on a terminal (tmux) shows the agent's text as it is written,
before the turn ends, and then not twice: with a daemon (the quick path's
follow, ``cli.remote_follow``) and without (this process's deck, ``cli.steer``);
so does ``agentdeck logs -f``. Off a terminal nothing changes: the text once, as
its event."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_argv, deck_env
from tests.support.tmux import Tmux
from tests.support.waiting import eventually

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.cli,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (make terminal)"),
]

WORDS = [f"piece{i}" for i in range(100)]
TEXT = "Streaming now: " + " ".join(WORDS) + " finished."
RUN_SECONDS = 90.0
ENDED = re.compile(r"\) done · \d+ turns")  # the run's last line (the spinner's has no ")")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**deck_env(tmp_path), "TERM": "xterm-256color"}


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "stream.yaml"
    turn = {"chunk_delay": 0.05, "reply": [{"text": TEXT}]}
    path.write_text(yaml.safe_dump({"name": "stream", "turns": [turn]}))
    return path


@pytest.fixture
async def daemon(env: dict[str, str]) -> AsyncIterator[Daemon]:
    running = await Daemon(env).start()
    try:
        yield running
    finally:
        running.stop()


async def _watch_run(tmux: Tmux, scenario: Path, tmp_path: Path) -> str:
    done = tmp_path / "run.done"
    command = " ".join(shlex.quote(a) for a in deck_argv("run", "--scenario", str(scenario), "go"))
    started = tmux(
        "new-session", "-d", "-s", "run", "-x", "200", "-y", "50",
        f"{command}; echo $? > {shlex.quote(str(done))}; sleep 600",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr

    async def midway() -> str | None:
        screen = tmux.screen("run", history=200)
        if done.exists():
            raise AssertionError(f"the run ended before its text was seen:\n{screen}")
        return screen if "piece5 " in screen else None

    early = await eventually(midway, timeout=RUN_SECONDS, what="the text as it is written")
    assert "finished." not in early and not ENDED.search(early), early

    async def ended() -> str | None:
        return tmux.screen("run", history=200) if done.exists() else None

    final = await eventually(ended, timeout=RUN_SECONDS, what="the run to end")
    assert done.read_text().strip() == "0", final
    return final


def _shown_once(screen: str) -> None:
    assert screen.count("piece99 ") == 1 and screen.count("finished.") == 1, screen
    assert screen.count("● ") == 1, screen  # one line of text, its event not printed again
    assert ENDED.search(screen), screen


async def test_run_with_a_daemon_shows_the_text_as_it_is_written(
    daemon: Daemon, tmux: Tmux, scenario: Path, tmp_path: Path
) -> None:
    _shown_once(await _watch_run(tmux, scenario, tmp_path))


async def test_run_without_a_daemon_shows_the_text_as_it_is_written(
    env: dict[str, str], tmux: Tmux, scenario: Path, tmp_path: Path
) -> None:
    _shown_once(await _watch_run(tmux, scenario, tmp_path))


def test_off_a_terminal_the_text_comes_once_as_its_event(
    env: dict[str, str], scenario: Path
) -> None:
    ran = deck(env, "run", "--scenario", str(scenario), "go")
    assert ran.code == 0, ran.err
    assert ran.out.count("● ") == 1 and ran.out.count(TEXT) == 1, ran.out


async def test_logs_follow_shows_the_text_as_it_is_written(
    daemon: Daemon, tmux: Tmux, scenario: Path, tmp_path: Path
) -> None:
    async with daemon.api() as api:
        created = await api.post("/api/agents", json={"prompt": "go", "scenario": str(scenario)})
        assert created.status_code == 201, created.text
    agent_id = created.json()["id"]
    done = tmp_path / "logs.done"
    command = " ".join(shlex.quote(a) for a in deck_argv("logs", "-f", agent_id))
    started = tmux(
        "new-session", "-d", "-s", "run", "-x", "200", "-y", "50",
        f"{command}; echo $? > {shlex.quote(str(done))}; sleep 600",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr

    async def midway() -> str | None:
        screen = tmux.screen("run", history=200)
        return screen if "piece5 " in screen and not done.exists() else None

    early = await eventually(midway, timeout=RUN_SECONDS, what="the text as it is written")
    assert "finished." not in early, early

    async def idle() -> str | None:
        screen = tmux.screen("run", history=200)
        return screen if "state idle" in screen else None

    final = await eventually(idle, timeout=RUN_SECONDS, what="the turn's end")
    assert final.count("piece99 ") == 1 and final.count("finished.") == 1, final
