"""The agent table draws a changed row again, and only that row's line (none when
the row is out of view); a wider value widens its column, a narrower one leaves it;
the cursor keys and a click pick an agent, and a new order keeps the one picked."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.strip import Strip

from agentdeck.core.agent import Agent
from agentdeck.core.events import StoredEvent
from agentdeck.tui.agent_table import COLUMNS, AgentTable
from agentdeck.tui.app import DeckApp
from tests.tui.test_snapshots import Nowhere, agent, agents

pytestmark = pytest.mark.anyio


def event(event_id: int, agent_id: str, kind: str, **data: Any) -> StoredEvent:
    return StoredEvent(id=event_id, agent_id=agent_id, type=kind, ts=0.0, data=data)


def cost(agent_id: str, usd: float, event_id: int) -> StoredEvent:
    return event(event_id, agent_id, "cost_updated", cost_usd=usd, input_tokens=0, output_tokens=0)


async def loaded(pilot: Pilot[None], rows: list[Agent]) -> AgentTable:
    app = pilot.app
    assert isinstance(app, DeckApp)
    app.board.load(rows)
    app._redraw = True
    app._flush_board()
    await pilot.pause()
    return app.query_one("#agents", AgentTable)


def record_lines(table: AgentTable) -> list[int]:
    """The lines (of the widget, 0 the header) the table draws from now on."""
    drawn: list[int] = []
    render_line = table.render_line

    def recording(y: int) -> Strip:
        drawn.append(y)
        return render_line(y)

    table.render_line = recording  # type: ignore[method-assign]
    return drawn


async def test_a_growing_cost_widens_its_column_and_only_its_row_is_drawn_again() -> None:
    app = DeckApp(Nowhere())
    async with app.run_test(size=(100, 30)) as pilot:
        table = await loaded(pilot, agents(time.time()))
        assert table.shown == ["fixr0004", "lead0001", "writ0002", "test0003"]
        cost_column = table.widths[COLUMNS.index("cost")]
        assert cost_column == len("$0.3012")
        drawn = record_lines(table)

        await app._take_event(cost("writ0002", 0.5, 1))  # as wide as before
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "cost")) == "$0.5000"
        assert drawn == [3]  # writer's line (under the header, fixer, lead), no other
        assert "$0.5000" in app.screen._compositor.render_update(full=True).render_segments(
            app.console
        )

        drawn.clear()
        await app._take_event(cost("writ0002", 12345.5, 2))
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "cost")) == "$12345.5000"
        assert table.widths[COLUMNS.index("cost")] == len("$12345.5000") > cost_column
        assert {0, 1, 2, 3, 4} <= set(drawn)  # a wider column: every line
        # The order did not change; the other rows as they were.
        assert table.shown == ["fixr0004", "lead0001", "writ0002", "test0003"]
        assert str(table.get_cell("fixr0004", "cost")) == "$0.3012"

        # A narrower value: the cell changes, the column keeps its width (never
        # measured again); a tool call and its return move only the tool cell.
        await app._take_event(
            event(3, "writ0002", "tool_called", tool="mcp__deck__a_rather_long_tool_name")
        )
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "tool")) == "a_rather_long_to"
        widest = table.widths[COLUMNS.index("tool")]
        assert widest == len("a_rather_long_to")
        drawn.clear()
        await app._take_event(event(4, "writ0002", "tool_returned", output="ok"))
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "tool")) == ""
        assert table.widths[COLUMNS.index("tool")] == widest
        assert drawn == [3]


async def test_a_row_out_of_view_changes_without_drawing_and_is_right_when_shown() -> None:
    now = time.time()
    many = [
        agent(f"a{i:04d}", f"agent-{i:04d}", "running", at=now - i, turns=1, cost=0.01)
        for i in range(200)
    ]
    app = DeckApp(Nowhere())
    async with app.run_test(size=(80, 24)) as pilot:
        table = await loaded(pilot, many)
        assert table.row_count == 200
        drawn = record_lines(table)
        await app._take_event(cost("a0150", 0.02, 1))  # far below the fold
        app._flush_board()
        await pilot.pause()
        assert drawn == []
        assert str(table.get_cell("a0150", "cost")) == "$0.0200"

        # Scrolled to it (the cursor moved there), it is drawn as it is now.
        table.focus()
        table.move_to("a0150")
        await pilot.pause()
        screen = app.screen._compositor.render_update(full=True).render_segments(app.console)
        assert "agent-0150" in screen and "$0.0200" in screen


async def test_keys_and_a_click_pick_an_agent_and_a_new_order_keeps_it() -> None:
    app = DeckApp(Nowhere())
    async with app.run_test(size=(100, 30)) as pilot:
        table = await loaded(pilot, agents(time.time()))
        await pilot.pause()
        assert app.selected == "fixr0004" and table.cursor_row == 0  # the first row
        await pilot.press("down")
        await pilot.pause()
        assert app.selected == "lead0001"
        await pilot.press("end")
        await pilot.pause()
        assert app.selected == "test0003" and table.cursor_row == 3
        await pilot.press("home", "down", "down")
        await pilot.pause()
        assert app.selected == "writ0002"

        # Sorted by name, the cursor stays on the agent, on its new line.
        await pilot.press("s")
        app._flush_board()
        await pilot.pause()
        assert table.shown == ["fixr0004", "lead0001", "test0003", "writ0002"]
        assert app.selected == "writ0002" and table.cursor_row == 3

        # A click on a row picks it; a click on the header picks nothing.
        await pilot.click("#agents", offset=(3, 1))
        await pilot.pause()
        assert app.selected == "fixr0004" and table.cursor_row == 0
        await pilot.click("#agents", offset=(3, 0))
        await pilot.pause()
        assert app.selected == "fixr0004"
