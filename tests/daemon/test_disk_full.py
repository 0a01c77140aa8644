"""The deck's home on a disk that fills while an agent works (a real tmpfs, filled
with zeros): the agent ends ``error`` saying the disk is full, everywhere (the
API, ``ls``, ``show``, the dashboard, the database itself), what could not be
written is said in the daemon's log, and ``down`` finishes."""

from __future__ import annotations

import errno
import os
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
description: waits in Bash until the test says go (a FIFO), then says a lot.
turns:
  - reply:
      - text: "Waiting for the go signal."
      - tool_use:
          name: Bash
          input:
            command: "head -n 1 go"
            description: "Wait for go (a FIFO: blocks until the test writes a line)"
            timeout: 120000
  - reply:
      - text: "%s"
""" % ("After the disk filled. " * 1000)


async def test_agents_on_a_full_disk_end_in_error_everywhere_and_down_finishes(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    works = [tmp_path / f"work{i}" for i in range(2)]
    for work in works:
        (work / ".agentdeck").mkdir(parents=True)
        (work / ".agentdeck" / "fill.yaml").write_text(SCENARIO)
        os.mkfifo(work / "go")
    with small_disk(tmp_path / "disk", "4m") as disk:
        env = deck_env(tmp_path, AGENTDECK_HOME=str(disk / "home"))
        daemon = await Daemon(env).start()
        daemons.append(daemon)
        async with daemon.api() as api:
            ids = []
            for work in works:
                body = {
                    "name": work.name,
                    "prompt": "wait, then talk",
                    "cwd": str(work),
                    "scenario": str(work / ".agentdeck" / "fill.yaml"),
                    "allow": ["Bash(head:*)"],
                }
                r = await api.post("/api/agents", json=body)
                assert r.status_code == 201, r.text
                ids.append(r.json()["id"])

            async def agents(**want: Any) -> list[dict[str, Any]] | None:
                got = [(await api.get(f"/api/agents/{i}")).json() for i in ids]
                return got if all(a[k] == v for a in got for k, v in want.items()) else None

            await eventually(lambda: agents(current_tool="Bash"), timeout=90, what="Bash")
            # The disk fills only once each call runs (its head holds the FIFO open):
            # filled between the model's call and its hook, the call itself is refused.
            writers = [
                await eventually(lambda w=work: _writer(w), timeout=90, what="a reader")
                for work in works
            ]
            filler = fill(disk)
            for fd in writers:
                with os.fdopen(fd, "w") as fifo:
                    fifo.write("go\n")
            db = disk / "home" / "agentdeck.db"

            async def recorded() -> bool:  # the daemon shows an end as it writes it
                return {r[0] for r in sqlite_rows(db, "SELECT state FROM agents")} == {"error"}

            await eventually(recorded, timeout=90, what="the ends in the database")
            ended = await eventually(lambda: agents(state="error"), timeout=30, what="errors")

            # Each says why, the second too: the room the first end freed stayed
            # for the ends, nothing else could take it.
            said = {a["id"]: a["last_error"] for a in ended}
            for text in said.values():
                assert text.startswith(f"the disk is full: {db} could not be written"), said
            assert all(a["pid"] is None and a["current_tool"] is None for a in ended)
            listed = deck(env, "ls", "--json")
            assert listed.code == 0, listed.err
            assert {a["id"]: (a["state"], a["last_error"]) for a in listed.json()} == {
                i: ("error", t) for i, t in said.items()
            }
            names = dict(zip(ids, [w.name for w in works], strict=True))
            for agent_id, text in said.items():
                shown = deck(env, "show", names[agent_id], "--json")  # by name: read, then live
                assert shown.code == 0, shown.err
                assert (shown.json()["state"], shown.json()["last_error"]) == ("error", text)
                page = await api.get(f"/agents/{agent_id}")
                assert page.status_code == 200 and "the disk is full: " in page.text
            rows = sqlite_rows(db, "SELECT id, state, last_error FROM agents")
            assert {r[0]: (r[1], r[2]) for r in rows} == {i: ("error", t) for i, t in said.items()}
            for agent_id in ids:
                last = sqlite_rows(
                    db,
                    f"SELECT type FROM events WHERE agent_id = '{agent_id}' "
                    "ORDER BY id DESC LIMIT 2",
                )
                assert last == [("state_changed",), ("error_occurred",)]

            # A write asked for meanwhile is refused as such (507), nothing started.
            r = await api.post("/api/agents", json={**body, "name": "late"})
            assert r.status_code == 507, r.text
            assert r.json()["error"]["message"].startswith("the disk is full: "), r.text
            assert len((await api.get("/api/agents")).json()["agents"]) == 2

            filler.unlink()
        down = deck(env, "down", timeout=60)
        assert down.code == 0, down.err
        assert daemon.proc is not None
        _, log = daemon.proc.communicate(timeout=30)
        assert daemon.proc.returncode == 0, log
        assert "the disk is full: not written: " in log  # what was lost is said
        assert "Task exception was never retrieved" not in log
        rows = sqlite_rows(db, "SELECT id, state, last_error FROM agents")
        assert {r[0]: (r[1], r[2]) for r in rows} == {i: ("error", t) for i, t in said.items()}


async def _writer(work: Path) -> int | None:
    """The agent's FIFO opened for writing once a reader has it open (ENXIO: not yet).
    The reader blocks until the test writes its line."""
    try:
        return os.open(work / "go", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        raise
