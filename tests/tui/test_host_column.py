"""The TUI's HOST column (issue 30): the runner host an agent runs on, as
``agentdeck ls`` shows it. None on a deck of one daemon (no agent has a host: the
table is as it was); from the first agent with a host on, a ``host`` column after
the state, the host's name cut to its width and nothing a terminal would act on."""

from __future__ import annotations

import dataclasses
import time

import pytest
from textual.pilot import Pilot

from agentdeck.core.agent import Agent
from agentdeck.tui.agent_table import COLUMNS, HOST_WIDTH, AgentTable
from agentdeck.tui.app import DeckApp
from agentdeck.tui.board import Row
from tests.tui.test_snapshots import Nowhere, agents
from tests.tui.test_table import loaded

pytestmark = pytest.mark.anyio


def hosted(agent: Agent, host: object) -> Agent:
    return dataclasses.replace(agent, extra={**agent.extra, "host": host})


def screen_text(pilot: Pilot[None]) -> str:
    app = pilot.app
    return str(app.screen._compositor.render_update(full=True).render_segments(app.console))


def header(table: AgentTable) -> list[str]:
    return "".join(s.text for s in table.render_line(0)).split()


async def test_no_host_column_on_a_deck_of_one_daemon() -> None:
    app = DeckApp(Nowhere())
    async with app.run_test(size=(120, 30)) as pilot:
        table = await loaded(pilot, agents(time.time()))
        assert not table.hosted
        assert header(table) == [c for c in COLUMNS if c != "host"]
        assert str(table.get_cell("lead0001", "host")) == ""


async def test_the_host_an_agent_runs_on_is_shown_once_an_agent_has_one() -> None:
    now = time.time()
    rows = agents(now)
    rows[0] = hosted(rows[0], "builder-2")  # lead
    rows[1] = hosted(rows[1], "gpu-box\x1b[31m-" + "x" * 40)  # writer: hostile, long
    rows[2] = hosted(rows[2], 7)  # not a name: nothing shown
    app = DeckApp(Nowhere())
    async with app.run_test(size=(140, 30)) as pilot:
        table = await loaded(pilot, rows)
        assert table.hosted
        assert header(table) == list(COLUMNS)
        assert str(table.get_cell("lead0001", "host")) == "builder-2"
        cut = str(table.get_cell("writ0002", "host"))
        assert len(cut) == HOST_WIDTH and "\x1b" not in cut and cut.startswith("gpu-box [31m")
        assert str(table.get_cell("test0003", "host")) == ""
        assert str(table.get_cell("fixr0004", "host")) == ""
        shown = screen_text(pilot)
        assert "builder-2" in shown and "\x1b[31m-" not in shown
        lead_line = next(
            line for line in shown.splitlines() if "lead" in line and "builder-2" in line
        )
        assert lead_line.index("awaiting_agents") < lead_line.index("builder-2")


async def test_a_host_given_later_shows_the_column_then() -> None:
    """An agent queued, then claimed by a host: the refetched row has its host, and
    the column appears (the whole table drawn again: every line is wider)."""
    now = time.time()
    rows = agents(now)
    app = DeckApp(Nowhere())
    async with app.run_test(size=(140, 30)) as pilot:
        table = await loaded(pilot, rows)
        assert not table.hosted
        app.board.upsert([hosted(rows[3], "runner-b")])  # fixer, as the deck now says
        app._redraw = True
        app._flush_board()
        await pilot.pause()
        assert table.hosted and "host" in header(table)
        assert str(table.get_cell("fixr0004", "host")) == "runner-b"
        assert "runner-b" in screen_text(pilot)


def test_a_row_takes_its_host_from_the_agents_record() -> None:
    [first, *_] = agents(time.time())
    assert Row.of(first).host == ""
    assert Row.of(hosted(first, "h1")).host == "h1"
    assert Row.of(hosted(first, ["h1"])).host == ""
