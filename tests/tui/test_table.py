"""The agent table redraws a changed row in place, and a wider value widens its
column (without DataTable measuring the whole column again)."""

from __future__ import annotations

import time

import pytest
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from agentdeck.tui.app import DeckApp
from tests.tui.test_snapshots import Nowhere, agents

pytestmark = pytest.mark.anyio


async def test_a_growing_cost_widens_its_column_and_only_its_cell_changes() -> None:
    app = DeckApp(Nowhere())
    async with app.run_test(size=(100, 30)) as pilot:
        app.board.load(agents(time.time()))
        app._redraw = True
        app._flush_board()
        await pilot.pause()
        table = app.query_one("#agents", DataTable)
        cost = table.columns[ColumnKey("cost")]
        before = cost.content_width
        assert before == len("$0.3012")

        event = {"id": 1, "agent_id": "writ0002", "type": "cost_updated",
                 "data": {"cost_usd": 12345.5, "input_tokens": 0, "output_tokens": 0}}  # fmt: skip
        await app._take_event(event)
        await pilot.pause()
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "cost")) == "$12345.5000"
        assert cost.content_width == len("$12345.5000") > before
        assert table.drawn["writ0002"][4] == "$12345.5000"
        # The order did not change: no whole redraw, the other rows as they were.
        assert [key.value for key in table.rows] == table.shown
        assert str(table.get_cell("fixr0004", "cost")) == "$0.3012"

        # A narrower value: the cell changes, the column keeps its width (never
        # measured again); a tool call and its return move only the tool cell.
        tool = table.columns[ColumnKey("tool")]
        await app._take_event({"id": 2, "agent_id": "writ0002", "type": "tool_called",
                               "data": {"tool": "mcp__deck__a_rather_long_tool_name"}})  # fmt: skip
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "tool")) == "a_rather_long_to"
        widest = tool.content_width
        assert widest == len("a_rather_long_to")
        await app._take_event({"id": 3, "agent_id": "writ0002", "type": "tool_returned",
                               "data": {"output": "ok"}})  # fmt: skip
        app._flush_board()
        await pilot.pause()
        assert str(table.get_cell("writ0002", "tool")) == ""
        assert tool.content_width == widest
