"""The inbox table (the agent table is ``agent_table.AgentTable``)."""

from __future__ import annotations

from typing import Any, TypeVar

from rich.text import Text
from textual.widgets import DataTable

from agentdeck.core.approvals import Approval
from agentdeck.core.asks import Ask
from agentdeck.core.memory_proposals import MemoryProposal
from agentdeck.tui.board import Board
from agentdeck.tui.render import tool_summary

# A tool call the policy asks about, a worker's question, or a memory an agent proposed.
InboxItem = Approval | Ask | MemoryProposal
T = TypeVar("T", Approval, Ask, MemoryProposal)


def box_of(item: InboxItem) -> str:
    """Which inbox ``item`` is in: ``approval``, ``ask`` or ``memory``."""
    if isinstance(item, Approval):
        return "approval"
    return "ask" if isinstance(item, Ask) else "memory"


class InboxTable(DataTable[Any]):
    """Pending approvals, asks and memories, one line each."""

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
            what: str | Text
            if isinstance(item, Approval):
                what = tool_summary(item.tool, item.input)[:120]
            elif isinstance(item, Ask):
                what = " ".join(item.text.split())[:120]
            else:  # the model's words: a Text, never read as markup
                what = Text(f"[{item.kind}] " + " ".join(item.text.split())[:120])
            box = box_of(item)
            self.add_row(box, who[:20], what, key=f"{box}:{item.id}")

    def pick(self, items: list[InboxItem], kind: type[T]) -> T | None:
        """The item of ``kind`` under the cursor, else the first of that kind (None if
        there is none)."""
        current = items[self.cursor_row] if 0 <= self.cursor_row < len(items) else None
        if isinstance(current, kind):
            return current
        return next((i for i in items if isinstance(i, kind)), None)
