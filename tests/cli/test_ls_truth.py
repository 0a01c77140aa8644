"""``agentdeck ls`` without a daemon shows the truth: an agent the store has as live
whose supervisor is gone is shown as such (table and JSON), with what to do; one
whose supervisor lives is shown as it is."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.settings import Settings
from agentdeck.store import Store
from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.anyio


async def test_ls_without_a_daemon_shows_agents_whose_supervisor_is_gone(
    settings: Settings, tmp_path: Path
) -> None:
    gone = subprocess.Popen(["true"])  # noqa: ASYNC220 - it ends at once
    gone.wait()
    now = time.time()
    # A pid the supervisor had, reused since by a process started after its last word.
    reused = subprocess.Popen(["sleep", "60"])  # noqa: ASYNC220 - killed below
    settings.ensure_home()
    try:
        async with Store.open(settings.db_path) as store:
            for name, owner, at in (
                ("orphan", gone.pid, now),
                ("watched", os.getpid(), now),
                ("reused", reused.pid, now - 60),
            ):
                await store.save_agent(
                    Agent(
                        id=f"agent000{name:0>8}", name=name, state=AgentState.RUNNING,
                        spec=AgentSpec(prompt="p"), cwd=str(tmp_path), created_at=at,
                        updated_at=at, owner_pid=owner,
                    )
                )  # fmt: skip
        env = deck_env(tmp_path)
        table = deck(env, "ls")
        rows = {r["name"]: r for r in json.loads(deck(env, "ls", "--json").out)}
    finally:
        reused.kill()
        reused.wait()
    assert table.code == 0, table.err
    orphan_line = next(line for line in table.out.splitlines() if "orphan" in line)
    watched_line = next(line for line in table.out.splitlines() if "watched" in line)
    reused_line = next(line for line in table.out.splitlines() if "reused" in line)
    assert "running, supervisor gone" in orphan_line
    assert "running, supervisor gone" in reused_line
    assert "supervisor gone" not in watched_line and "running" in watched_line
    assert "2 agent(s) shown live have no supervisor: `agentdeck up` reconciles them" in table.out
    assert rows["orphan"].get("supervisor_gone") is True
    assert rows["reused"].get("supervisor_gone") is True
    assert "supervisor_gone" not in rows["watched"]
