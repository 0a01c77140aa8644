"""The deck's two tables: the agents (a tree, redrawn row by row) and the inbox."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from agentdeck.tui.board import Board, Row, age
from agentdeck.tui.render import tool_summary

NAME_WIDTH = 28
COLUMNS = (("name", "name"), ("state", "state"), ("tool", "tool"), ("turns", "turns"),
           ("cost", "cost"), ("age", "age"))  # fmt: skip
_STATE_STYLE = {
    "running": "green",
    "starting": "green",
    "awaiting_permission": "bold magenta",
    "awaiting_input": "bold magenta",
    "awaiting_agents": "cyan",
    "idle": "blue",
    "done": "dim",
    "error": "bold red",
    "interrupted": "yellow",
    "killed": "red",
}


def short_tool(tool: str | None) -> str:
    """``mcp__deck__wait_for_agents`` is ``wait_for_agents`` in a narrow column."""
    if not tool:
        return ""
    return tool.rsplit("__", 1)[-1] if tool.startswith("mcp__") else tool


def cells(row: Row, depth: int) -> tuple[Any, ...]:
    prefix = "  " * (depth - 1) + "└ " if depth else ""
    name = (prefix + row.name)[:NAME_WIDTH]
    return (
        name,
        Text(row.state, style=_STATE_STYLE.get(row.state, "")),
        short_tool(row.current_tool)[:16],
        str(row.turns),
        f"${row.cost_usd:.4f}",
        age(row.created_at),
    )


class AgentTable(DataTable[Any]):
    """The agents, as a tree; redrawn whole only when the order changes."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.shown: list[str] = []
        self.depths: dict[str, int] = {}  # of the rows shown
        self.drawn: dict[str, tuple[Any, ...]] = {}  # the cells shown, per row

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def draw(
        self, board: Board, order: list[tuple[Row, int]] | None, dirty: set[str], *,
        whole: bool, selected: str | None,
    ) -> None:  # fmt: skip
        """Draw ``order``: every row if ``whole`` or the order changed, else the
        ``dirty`` ones in place (``order`` None: the caller knows it has not changed)."""
        ids = self.shown if order is None else [row.id for row, _ in order]
        if order is not None and (whole or ids != self.shown):
            self.clear()
            self.depths, self.drawn = {}, {}
            for row, depth in order:
                values = cells(row, depth)
                self.add_row(*values, key=row.id)
                self.depths[row.id], self.drawn[row.id] = depth, values
            self.shown = ids
            if selected in ids:
                self.move_cursor(row=ids.index(selected), animate=False)
            return
        for agent_id in dirty:
            if agent_id not in self.depths or agent_id not in board.rows:
                continue
            values = cells(board.rows[agent_id], self.depths[agent_id])
            before = self.drawn.get(agent_id, ())
            for i, ((_, key), value) in enumerate(zip(COLUMNS, values, strict=True)):
                if i < len(before) and before[i] == value:
                    continue  # only the cells that changed (a cost event: one cell)
                self._widen(key, value.cell_len if isinstance(value, Text) else cell_len(value))
                self.update_cell(agent_id, key, value)
            self.drawn[agent_id] = values

    def _widen(self, key: str, width: int) -> None:
        """A column only ever widens, to the widest value put in it. Not
        ``update_cell(update_width=True)``: DataTable then measures the whole column
        again (every row) for each marked cell narrower than the widest, which under a
        stream of growing costs was most of the TUI's time."""
        column = self.columns[ColumnKey(key)]
        if width > column.content_width:
            column.content_width = width
            self._require_update_dimensions = True  # DataTable's: lay the columns out again

    def tick_ages(self, board: Board) -> None:
        for agent_id in self.shown:
            row = board.rows.get(agent_id)
            drawn = self.drawn.get(agent_id)
            if row is None or drawn is None:
                continue
            shown = age(row.created_at)
            if shown != drawn[-1]:  # most ages move on rarely ("3h")
                self.update_cell(agent_id, "age", shown)
                self.drawn[agent_id] = (*drawn[:-1], shown)


class InboxTable(DataTable[Any]):
    """Pending approvals and asks, one line each."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", show_header=False, **kw)

    def on_mount(self) -> None:
        self.add_column("kind", key="kind")
        self.add_column("agent", key="agent")
        self.add_column("what", key="what")

    def draw(self, items: list[dict[str, Any]], board: Board) -> None:
        self.clear()
        for item in items:
            row = board.rows.get(str(item.get("agent_id")))
            who = row.name if row else str(item.get("agent_id"))[:12]
            if item["box"] == "approval":
                what = tool_summary(str(item.get("tool")), item.get("input") or {})
            else:
                what = " ".join(str(item.get("text", "")).split())
            box = item["box"]
            self.add_row(box, who[:20], what[:120], key=f"{box}:{item['id']}")

    def pick(self, items: list[dict[str, Any]], kind: str | None) -> dict[str, Any] | None:
        """The item under the cursor; for a ``kind``, that one if of the kind, else the
        first of the kind (None if there is none)."""
        current = items[self.cursor_row] if 0 <= self.cursor_row < len(items) else None
        if kind is None or (current is not None and current["box"] == kind):
            return current
        return next((i for i in items if i["box"] == kind), None)
