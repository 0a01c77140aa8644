"""The deck's home on a disk that fills while an agent works (a real tmpfs, filled
with zeros): the agent ends ``error`` saying the disk is full, everywhere (the
API, ``ls``, ``show``, the dashboard, the database itself), what could not be
written is said in the daemon's log, and ``down`` finishes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.fulldisk import fill, small_disk
from tests.support.waiting import eventually


def sqlite_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """What the database itself holds, as another process reads it."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCENARIO = """\
name: fill
description: waits in Bash until the test says go, then says a lot.
turns:
  - reply:
      - text: "Waiting for the go signal."
      - tool_use:
          name: Bash
          input:
            command: "python3 -c \\"import os,time\\nwhile not os.path.exists('go'):
              time.sleep(0.05)\\""
            description: "Wait for go"
            timeout: 120000
  - reply:
      - text: "%s"
""" % ("After the disk filled. " * 1000)


async def test_an_agent_on_a_full_disk_ends_in_error_everywhere_and_down_finishes(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    work = tmp_path / "work"
    (work / ".agentdeck").mkdir(parents=True)
    (work / ".agentdeck" / "fill.yaml").write_text(SCENARIO)
    with small_disk(tmp_path / "disk", "4m") as disk:
        env = deck_env(tmp_path, AGENTDECK_HOME=str(disk / "home"))
        daemon = await Daemon(env).start()
        daemons.append(daemon)
        async with daemon.api() as api:
            body = {
                "prompt": "wait, then talk",
                "cwd": str(work),
                "scenario": str(work / ".agentdeck" / "fill.yaml"),
                "allow": ["Bash(python3:*)"],
            }
            r = await api.post("/api/agents", json=body)
            assert r.status_code == 201, r.text
            agent_id = r.json()["id"]

            async def agent(**want: Any) -> dict[str, Any] | None:
                got = (await api.get(f"/api/agents/{agent_id}")).json()
                return got if all(got[k] == v for k, v in want.items()) else None

            await eventually(lambda: agent(current_tool="Bash"), timeout=90, what="Bash")
            filler = fill(disk)
            (work / "go").touch()
            ended = await eventually(lambda: agent(state="error"), timeout=90, what="error")

            said = ended["last_error"]
            assert said.startswith(f"the disk is full: {disk / 'home' / 'agentdeck.db'} "), said
            assert ended["pid"] is None and ended["current_tool"] is None
            listed = deck(env, "ls", "--json")
            assert listed.code == 0, listed.err
            assert [(a["id"], a["state"]) for a in listed.json()] == [(agent_id, "error")]
            shown = deck(env, "show", agent_id[:8], "--json")
            assert shown.code == 0, shown.err
            assert (shown.json()["state"], shown.json()["last_error"]) == ("error", said)
            page = await api.get(f"/agents/{agent_id}")
            assert page.status_code == 200 and "the disk is full: " in page.text
            db = disk / "home" / "agentdeck.db"
            assert sqlite_rows(db, "SELECT state, last_error FROM agents") == [("error", said)]
            last = sqlite_rows(db, "SELECT type FROM events ORDER BY id DESC LIMIT 2")
            assert last == [("state_changed",), ("error_occurred",)]

            filler.unlink()
        down = deck(env, "down", timeout=60)
        assert down.code == 0, down.err
        assert daemon.proc is not None
        _, log = daemon.proc.communicate(timeout=30)
        assert daemon.proc.returncode == 0, log
        assert "the disk is full: not written: " in log and f"of agent {agent_id}" in log
        assert "Task exception was never retrieved" not in log
        assert sqlite_rows(db, "SELECT state, last_error FROM agents") == [("error", said)]
