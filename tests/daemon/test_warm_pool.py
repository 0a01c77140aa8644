"""The daemon's warm pool as a user meets it: `agentdeck run` through the daemon
takes the process started ahead, and `agentdeck down` leaves none behind."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from agentdeck.runner import procs
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def warm_children(daemon: Daemon) -> list[int]:
    """The daemon's Claude Code processes (only warm ones once no agent runs)."""
    root = psutil.Process(int(daemon.info["pid"]))  # type: ignore[call-overload]
    return [p.pid for p in root.children() if procs.looks_like_claude(p.pid)]


async def test_run_through_the_daemon_takes_the_warm_process_and_down_stops_it(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    env = deck_env(tmp_path, AGENTDECK_WARM_POOL="1")
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    first = deck(env, "run", "--scenario", "three-turns", "say one", "--json")
    assert first.code == 0, first.err

    async def one_warm() -> list[int] | None:
        return warm_children(daemon) or None

    (warm,) = await eventually(one_warm, timeout=60, what="a warm Claude Code")
    # not on the board
    listed = deck(env, "ls", "--json").json()
    assert [a["id"] for a in listed] == [first.json()["agent"]["id"]]

    second = deck(env, "run", "--scenario", "three-turns", "say two", "--json")
    assert second.code == 0, second.err
    agent = second.json()["agent"]
    assert agent["state"] == "done" and agent["pid"] is None
    assert agent["extra"].get("warm") is True  # it ran on the process started ahead
    assert "warm" not in first.json()["agent"]["extra"]
    assert procs.wait_gone([warm], 30) == []  # it ran that agent, and exited with it

    (again,) = await eventually(one_warm, timeout=60, what="the next warm Claude Code")
    tree = [p.pid for p in procs.process_tree(again)]
    down = deck(env, "down")
    assert down.code == 0, down.err
    assert procs.wait_gone(tree, 10) == []
    workspaces = Path(env["AGENTDECK_HOME"]) / "workspaces"
    assert sorted(p.name for p in workspaces.iterdir()) == sorted(
        [first.json()["agent"]["id"], agent["id"]]
    )


async def test_a_warm_process_does_not_outlive_a_killed_daemon(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    env = deck_env(tmp_path, AGENTDECK_WARM_POOL="1")
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    assert deck(env, "run", "--scenario", "three-turns", "say one").code == 0

    async def one_warm() -> list[int] | None:
        return warm_children(daemon) or None

    (warm,) = await eventually(one_warm, timeout=60, what="a warm Claude Code")
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    # nothing recorded it for the next `up` to stop: its input ends, and it exits
    assert procs.wait_gone([warm], 60) == []
