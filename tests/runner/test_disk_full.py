"""A tool's full output that the disk has no room for (the deck's home on a real
4 MiB tmpfs, a 5 MB output): ``agentdeck run`` ends the agent ``error`` saying
the disk is full and where, exits 1, and leaves no part of the file behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env
from tests.support.fulldisk import small_disk

pytestmark = pytest.mark.cli


def test_an_output_too_big_for_the_disk_ends_the_run_saying_so(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "4m") as disk:
        home = disk / "home"
        env = deck_env(tmp_path, AGENTDECK_HOME=str(home))
        done = deck(
            env, "run", "--scenario", "big-output", "--allow", "Bash(python3:*)", "--json", "go"
        )
        assert done.code == 1, done.out + done.err
        agent = done.json()["agent"]
        said = agent["last_error"]
        assert agent["state"] == "error", said
        assert said.startswith("the disk is full: a tool's full output could not be kept in "), said
        assert said.endswith(".txt") and f"{home / 'payloads' / agent['id']}/" in said
        assert "Traceback" not in done.err
        assert not list((home / "payloads").rglob("*.tmp"))  # no part of it takes room

        conn = sqlite3.connect(home / "agentdeck.db")
        try:
            row = conn.execute("SELECT state, last_error FROM agents").fetchall()
        finally:
            conn.close()
        assert row == [("error", said)]
