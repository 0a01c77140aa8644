"""The CLI on a PostgreSQL store with no daemon: an agent run, then the read
commands, each as a user types it. There is no file for the quick path's
read-only look, so the reads go through a deck the command opens
(``cli.deck_wire``); they used to end in an AssertionError."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli


def test_run_then_every_read_on_a_postgresql_store(tmp_path: Path, pg_url: str) -> None:
    env = deck_env(tmp_path, AGENTDECK_DATABASE_URL=pg_url)
    ran = deck(env, "run", "--scenario", "chat", "--name", "pg-one", "Hello!", "--json")
    assert ran.code == 0, ran.err
    agent = ran.json()["agent"]
    assert agent["state"] == "done"
    assert not (tmp_path / "home" / "agentdeck.db").exists()  # nothing went to SQLite

    listed = deck(env, "ls", "--json")
    assert listed.code == 0, listed.err
    assert [a["id"] for a in listed.json()] == [agent["id"]]
    shown = deck(env, "show", "pg-one", "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["id"] == agent["id"] and shown.json()["children"] == []
    logs = deck(env, "logs", agent["id"][:6], "--json")
    assert logs.code == 0, logs.err
    kinds = [line.split('"type":', 1)[1][:20] for line in logs.out.splitlines()]
    assert any("turn_completed" in k for k in kinds), logs.out
    followed = deck(env, "logs", "pg-one", "--follow")  # ended: prints the log and stops
    assert followed.code == 0, followed.err
    for command in (["approvals", "--json"], ["asks", "--json"], ["queue", "--json"]):
        done = deck(env, *command)
        assert done.code == 0, (command, done.err)
        assert "Traceback" not in done.err


def test_an_unknown_agent_on_a_postgresql_store_is_one_clear_line(
    tmp_path: Path, pg_url: str
) -> None:
    env = deck_env(tmp_path, AGENTDECK_DATABASE_URL=pg_url)
    for command in (["show", "nope"], ["logs", "nope"]):
        done = deck(env, *command)
        assert done.code == 1, (command, done)
        assert "no agent" in done.err and "Traceback" not in done.err
