"""The daemon as a user runs it: up, status, a second up, CLI through it, down,
a hung daemon, kill -9 and restart."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from agentdeck.runner import procs
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


@pytest.mark.parametrize("detach", [False, True])
def test_up_refuses_a_token_file_without_a_token(env: dict[str, str], detach: bool) -> None:
    token = Path(env["AGENTDECK_HOME"]) / "token"
    token.parent.mkdir(parents=True)
    token.write_text(" \n")
    done = deck(env, "up", *(["--detach"] if detach else []), timeout=60)
    assert done.code != 0, done.out + done.err
    assert f"the API token file {token} holds no token" in done.err, done.err
    assert f"rm {token}" in done.err and "Traceback" not in done.err
    assert deck(env, "status").code == 1  # no daemon was left running
    token.unlink()  # the fix it names works
    assert deck(env, "ls").code == 0


def test_a_detached_daemon_logs_no_token_in_a_private_log(env: dict[str, str]) -> None:
    logs = Path(env["AGENTDECK_HOME"]) / "logs"
    logs.mkdir(parents=True)
    logs.chmod(0o755)
    (logs / "daemon.log").write_text("an earlier run's line\n")
    (logs / "daemon.log").chmod(0o644)  # as an earlier version left it
    started = deck(env, "up", "--detach", timeout=60)
    try:
        assert started.code == 0, started.err
        token = (Path(env["AGENTDECK_HOME"]) / "token").read_text().strip()
        assert f"/login?token={token}" in started.out  # the terminal gets the link
        assert deck(env, "run", "--scenario", "chat", "hello").code == 0
    finally:
        assert deck(env, "down", timeout=60).code == 0
    text = (logs / "daemon.log").read_text()
    assert "an earlier run's line" in text and "agentdeck daemon on " in text
    assert token not in text and "token=" not in text
    assert (logs / "daemon.log").stat().st_mode & 0o777 == 0o600
    assert logs.stat().st_mode & 0o777 == 0o700


async def test_up_status_second_up_run_through_it_and_down(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    assert (daemon.home / "token").stat().st_mode & 0o777 == 0o600

    status = deck(env, "status", "--json")
    assert status.code == 0 and status.json()["running"] is True
    assert status.json()["pid"] == daemon.info["pid"]

    second = deck(env, "up")
    assert second.code == 1 and "already running" in second.err

    done = deck(env, "run", "--scenario", "chat", "hello", "--json")
    assert done.code == 0, done.err
    agent = done.json()["agent"]
    assert agent["state"] == "done" and agent["owner_pid"] == daemon.info["pid"]
    listed = deck(env, "ls", "--json").json()
    assert [a["id"] for a in listed] == [agent["id"]]
    logs = deck(env, "logs", agent["id"])
    assert "Hello! I am the scripted model" in logs.out

    down = deck(env, "down")
    assert down.code == 0 and "stopped" in down.out
    assert daemon.proc is not None and daemon.proc.wait(timeout=30) == 0
    assert not (daemon.home / "daemon.json").exists()
    assert deck(env, "status").code == 1
    assert "no daemon running" in deck(env, "down").out


async def test_a_hung_daemon_is_reported_not_bypassed(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        done = deck(env, "ls", timeout=60)
        assert done.code == 1
        assert "did not answer" in done.err and "Traceback" not in done.err
    finally:
        daemon.proc.send_signal(signal.SIGCONT)


async def test_kill_9_then_restart_loses_nothing_and_leaves_no_orphans(
    env: dict[str, str], daemons: list[Daemon]
) -> None:
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    long = {"scenario": "long-tool", "allow": ["Bash(python3:*)"], "prompt": "long job"}
    async with daemon.api() as api:
        ids = []
        for i, extra in enumerate([{}, {}, {"resume_on_restart": True}]):
            r = await api.post("/api/agents", json={**long, "name": f"w{i}", **extra})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])

        async def all_in_tool() -> list[dict[str, object]] | None:
            agents = [(await api.get(f"/api/agents/{i}")).json() for i in ids]
            pids = [a["pid"] for a in agents]
            # In its tool: the tool's process runs (a sandbox adds processes of its own).
            busy = all(a["current_tool"] and a["session_id"] for a in agents)
            if busy and all(isinstance(p, int) and len(procs.process_tree(p)) >= 2 for p in pids):
                return agents
            return None

        agents = await eventually(all_in_tool, timeout=90, what="three agents in their tool")
        acked = (await api.get("/api/events", params={"limit": 5000})).json()["events"]
    trees = [pid for a in agents for pid in (p.pid for p in procs.process_tree(int(a["pid"])))]

    assert daemon.proc is not None
    daemon.proc.kill()  # kill -9: no shutdown code runs
    daemon.proc.wait(timeout=10)

    restarted = await Daemon(env).start()
    daemons.append(restarted)
    # The stale agents' processes are gone: no orphans.
    assert procs.wait_gone(trees, timeout=20) == []
    async with restarted.api() as api:
        after = [(await api.get(f"/api/agents/{i}")).json() for i in ids]
        events = (await api.get("/api/events", params={"limit": 5000})).json()["events"]
    assert [a["state"] for a in after[:2]] == ["interrupted", "interrupted"]
    assert after[2]["state"] in {"starting", "running", "idle"}  # resumed in its session
    assert after[2]["session_id"] == agents[2]["session_id"]
    # Every acknowledged event survived, unchanged and in order.
    by_id = {e["id"]: e for e in events}
    assert all(by_id.get(e["id"]) == e for e in acked)
    ids_seen = [e["id"] for e in events]
    assert ids_seen == sorted(ids_seen)
    db = sqlite3.connect(Path(env["AGENTDECK_HOME"]) / "agentdeck.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    for pid in (int(a["pid"]) for a in agents):
        assert not procs.is_running(pid)
    assert (Path(env["AGENTDECK_HOME"]) / "daemon.json").exists()


def test_demo_runs_a_crew_and_stops_cleanly(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "demo", "--port", "0", "--exit-when-done", timeout=240)
    assert done.code == 0, done.err
    assert "/login?token=" in done.out
    for name in ("notes", "tests", "reporter", "chat"):
        assert f"  {name}: idle" in done.out
    assert (tmp_path / "home" / "demo" / "agentdeck.db").exists()
    # tests worked in a worktree of the demo's repository; its fix landed, tested.
    assert "merge queue: tests's branch landed on main as" in done.out
    repo = tmp_path / "home" / "demo" / "calc-repo"
    assert "a + b" in (repo / "calc.py").read_text()


async def test_a_pending_approval_survives_a_restart_and_reaches_the_agent(
    env: dict[str, str], daemons: list[Daemon], tmp_path: Path
) -> None:
    profile, scenario = ask_profile_and_scenario(tmp_path)
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    async with daemon.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "make it", "scenario": scenario, "profile": profile},
        )
        agent_id = created.json()["id"]

        async def pending() -> list[dict[str, object]]:
            return (await api.get("/api/approvals")).json()["approvals"]

        (approval,) = await eventually(pending, timeout=60, what="a pending approval")
    assert daemon.proc is not None
    daemon.proc.kill()
    daemon.proc.wait(timeout=10)

    restarted = await Daemon(env).start()
    daemons.append(restarted)
    async with restarted.api() as api:
        still = (await api.get("/api/approvals")).json()["approvals"]
        assert [a["id"] for a in still] == [approval["id"]]  # still listed, still pending
        assert (await api.get(f"/api/agents/{agent_id}")).json()["state"] == "interrupted"
        answered = await api.post(
            f"/api/approvals/{approval['id']}", json={"decision": "allow", "message": "fine by me"}
        )
        assert answered.json()["state"] == "allowed"
        resumed = await api.post(f"/api/agents/{agent_id}/resume", json={})
        assert resumed.status_code == 200, resumed.text

        async def told() -> list[str]:
            events = (await api.get("/api/events", params={"agent": agent_id})).json()["events"]
            return [
                e["data"]["text"]
                for e in events
                if e["type"] == "user_message_sent"
                and "While you were stopped" in e["data"]["text"]
            ]

        (note,) = await eventually(told, timeout=30, what="the answer reported to the agent")
        assert "approved: fine by me" in note
