"""The inbox table (the agent table is ``agent_table.AgentTable``)."""

from __future__ import annotations

from typing import Any, TypeVar

from textual.widgets import DataTable

from agentdeck.core.approvals import Approval
from agentdeck.core.asks import Ask
from agentdeck.tui.board import Board
from agentdeck.tui.render import tool_summary

InboxItem = Approval | Ask  # a tool call the policy asks about, or a worker's question
T = TypeVar("T", Approval, Ask)


def box_of(item: InboxItem) -> str:
    """Which inbox ``item`` is in: ``approval`` or ``ask``."""
    return "approval" if isinstance(item, Approval) else "ask"


class InboxTable(DataTable[Any]):
    """Pending approvals and asks, one line each."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(cursor_type="row", show_header=False, **kw)

    def on_mount(self) -> None:
        self.add_column("kind", key="kind")
        self.add_column("agent", key="agent")
        self.add_column("what", key="what")

    def draw(self, items: list[InboxItem], board: Board) -> None:
        self.clear()
        for item in items:
            row = board.rows.get(item.agent_id)
            who = row.name if row else item.agent_id[:12]
            if isinstance(item, Approval):
                what = tool_summary(item.tool, item.input)
            else:
                what = " ".join(item.text.split())
            box = box_of(item)
            self.add_row(box, who[:20], what[:120], key=f"{box}:{item.id}")

    def pick(self, items: list[InboxItem], kind: type[T]) -> T | None:
        """The item of ``kind`` under the cursor, else the first of that kind (None if
        there is none)."""
        current = items[self.cursor_row] if 0 <= self.cursor_row < len(items) else None
        if isinstance(current, kind):
            return current
        return next((i for i in items if isinstance(i, kind)), None)
