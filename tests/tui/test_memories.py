"""Memories agents propose, in the TUI's inbox (Textual's ``run_test`` + Pilot)
against a real daemon running an agent on the real Claude Code CLI and the
scripted model: the proposal is a row (its markup shown as text), ``y`` keeps it,
``x`` drops one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.memory_proposals import MemoryProposal
from agentdeck.tui.app import DeckApp
from agentdeck.tui.link import FixedLocator
from agentdeck.tui.tables import InboxTable
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck_env
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCENARIO = str(Path(__file__).resolve().parents[1] / "memory" / "scenarios" / "remember.yaml")


async def _true(value: Any) -> Any:
    return value


async def test_a_proposal_is_in_the_inbox_and_y_keeps_x_drops(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = await Daemon(deck_env(tmp_path)).start()
    daemons.append(daemon)
    app = DeckApp(FixedLocator(daemon.url, daemon.token))
    async with app.run_test(size=(100, 30)) as pilot, daemon.api() as api:
        for prompt in ("REMEMBER-TASK", "SMUGGLE-TASK"):
            made = await api.post("/api/agents", json={"prompt": prompt, "scenario": SCENARIO})
            assert made.status_code == 201, made.text
        await eventually(lambda: _true(len(app.inbox) == 2), timeout=90, what="two memories")
        assert all(isinstance(item, MemoryProposal) for item in app.inbox)
        title = str(app.screen_stack[0].query_one("#inbox-title").render())
        assert "y keep memory" in title and "x drop memory" in title
        table = app.screen_stack[0].query_one("#inbox", InboxTable)
        cells = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert any("[bold red]markup[/bold red]" in c for c in cells), cells  # text, not markup
        assert not any("\x1b" in c for c in cells)

        first = app.inbox[0]
        assert isinstance(first, MemoryProposal)
        await pilot.press("y")
        await eventually(lambda: _true(len(app.inbox) == 1), what="the kept one gone")
        kept = (await api.get(f"/api/memories/{first.id}")).json()
        assert kept["state"] == "accepted" and kept["decided_by"] == "user:tui:admin"

        (last,) = app.inbox
        assert isinstance(last, MemoryProposal)
        await pilot.press("x")
        await eventually(lambda: _true(not app.inbox), what="the inbox to empty")
        dropped = (await api.get(f"/api/memories/{last.id}")).json()
        assert dropped["state"] == "rejected"
