"""The inbox table (the agent table is ``agent_table.AgentTable``)."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from agentdeck.tui.board import Board
from agentdeck.tui.render import tool_summary


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
