"""The transcript pane and ``agentdeck logs`` show the same lines for the same
events (one function draws both: ``core.log_lines``), against a real daemon.

It showed the first prompt twice (from ``agent_spawned`` and from the
``user_message_sent`` that sends it) and no ``sandbox_blocked`` line at all."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import (
    AssistantText,
    Notice,
    PermissionRequested,
    PermissionResolved,
    SandboxBlocked,
    StateChanged,
    ToolCalled,
    ToolReturned,
    TurnCompleted,
    UserMessageSent,
    spawned_events,
)
from agentdeck.core.ids import new_agent_id
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from agentdeck.tui.app import DeckApp
from agentdeck.tui.link import HomeLocator
from agentdeck.tui.transcript import TranscriptView
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

PROMPT = "fix the flaky test in [tests/test_net.py]"


async def seed(home: Path) -> str:
    """An agent's log as the runner writes it: spawned, its prompt sent, a call the
    sandbox got in the way of, an approval, a turn."""
    settings = Settings(home=home)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    now = time.time()
    agent = Agent(
        id=new_agent_id(), name="net", state=AgentState.IDLE, spec=AgentSpec(prompt=PROMPT),
        cwd="/tmp", created_at=now, updated_at=now,
    )  # fmt: skip
    a = agent.id
    try:
        await store.record(spawned_events(agent), agent)
        await store.append(
            [
                UserMessageSent(agent_id=a, ts=now, text=PROMPT),
                StateChanged(agent_id=a, ts=now, old="starting", new="running"),
                AssistantText(agent_id=a, ts=now, text="Let me fetch the package."),
                ToolCalled(agent_id=a, ts=now, tool_use_id="t1", tool="Bash",
                           input={"command": "pip download requests"}),
                SandboxBlocked(agent_id=a, ts=now, what="network", target="pypi.org:443"),
                ToolReturned(agent_id=a, ts=now, tool_use_id="t1", output="network is unreachable",
                             size=22, is_error=True),
                SandboxBlocked(agent_id=a, ts=now, what="write", target="/etc/hosts"),
                Notice(agent_id=a, ts=now, kind="sandbox", message="the sandbox holds the network"),
                PermissionRequested(agent_id=a, ts=now, request_id="apr1", tool="Bash",
                                    input={"command": "git push"}, reason="no rule allows it"),
                PermissionResolved(agent_id=a, ts=now, request_id="apr1", decision="deny",
                                   reason="not today", by="user:cli"),
                TurnCompleted(agent_id=a, ts=now, subtype="success", is_error=False,
                              terminal_reason="success", result="done", session_id="s1",
                              num_turns=3, duration_ms=900, cost_usd=0.0123),
                StateChanged(agent_id=a, ts=now, old="running", new="idle"),
            ]
        )  # fmt: skip
    finally:
        await store.close()
    return a


async def _true(value: Any) -> Any:
    return value


async def test_the_transcript_shows_what_logs_shows(tmp_path: Path, daemons: list[Daemon]) -> None:
    env = deck_env(tmp_path)
    agent_id = await seed(Path(env["AGENTDECK_HOME"]))
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    logs = deck(env, "logs", agent_id, timeout=60)
    assert logs.code == 0, logs.err
    # Text is Markdown in the pane, a call one line holding its output: the rest is
    # one line of the log each.
    lines = [
        line.rstrip() for line in logs.out.splitlines() if not line.startswith(("● ", "⚙ ", "  ⎿ "))
    ]
    assert f"> {PROMPT}" in lines and "⛔ sandbox blocked a network: pypi.org:443" in lines
    app = DeckApp(HomeLocator(daemon.home))
    async with app.run_test(size=(200, 50)):
        view = app.query_one("#transcript", TranscriptView)
        await eventually(lambda: _true(app.selected == agent_id), what="the agent selected")
        await eventually(lambda: _true("idle" in view.text), what="its transcript, to the end")
        shown = [line.rstrip() for line in view.text.splitlines()]
    assert [line for line in shown if line in lines] == lines, (shown, lines)
    assert shown.count(f"> {PROMPT}") == 1, "the first prompt, once"
    assert "⛔ sandbox blocked a write: /etc/hosts" in shown
    assert "▸ ⚙ Bash(pip download requests)  error, 22 bytes" in shown
    assert "Let me fetch the package." in shown


async def test_a_live_agent_on_the_real_cli_reads_the_same_in_the_pane_and_the_log(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    """An agent the daemon runs (Claude Code and the scripted model), watched live."""
    env = deck_env(tmp_path)
    daemon = await Daemon(env).start()
    daemons.append(daemon)
    app = DeckApp(HomeLocator(daemon.home))
    async with app.run_test(size=(200, 50)), daemon.api() as api:
        created = await api.post(
            "/api/agents", json={"prompt": "say hello", "name": "chatty", "scenario": "chat"}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        view = app.query_one("#transcript", TranscriptView)
        await eventually(lambda: _true(app.selected == agent_id), what="the agent selected")
        await eventually(lambda: _true("idle" in view.text), timeout=60, what="its turn, live")
        shown = [line.rstrip() for line in view.text.splitlines()]
    logs = deck(env, "logs", agent_id, timeout=60)
    assert logs.code == 0, logs.err
    lines = [
        line.rstrip() for line in logs.out.splitlines() if not line.startswith(("● ", "⚙ ", "  ⎿ "))
    ]
    assert [line for line in shown if line in lines] == lines, (shown, lines)
    assert shown.count("> say hello") == 1, "the first prompt, once"
