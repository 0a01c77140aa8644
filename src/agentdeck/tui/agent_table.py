"""The agent table: a tree of agents drawn with Textual's line API.

Only the lines in view are drawn, each from a cached ``Strip`` per row; a changed row
drops its own strip and, when it is in view, asks for its one line to be drawn again.
(``DataTable`` keys every cache on one counter that each ``update_cell`` bumps, so one
changed cell drew every visible row again and sorted and measured every row: under a
stream of events that was most of the TUI's time.) A column only ever widens, to the
widest value put in it.

Keys when focused: up/down, page up/down, home/end move the cursor; a click picks a
row. Moving the cursor posts ``Highlighted`` with the agent's id.

The ``host`` column (the runner host an agent runs on, as in ``agentdeck ls``) is
shown from the first row that has a host on: a deck of one daemon has none.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agentdeck.tui.board import Board, Row, age

NAME_WIDTH = 28
TOOL_WIDTH = 16
HOST_WIDTH = 24
COLUMNS = ("name", "state", "host", "tool", "turns", "cost", "age")
_AGE = COLUMNS.index("age")
_HOST = COLUMNS.index("host")
PADDING = 1  # a space each side of a cell, as DataTable draws them
_STATE_STYLE = {
    "running": "green",
    "starting": "green",
    "awaiting_permission": "bold magenta",
    "awaiting_input": "bold magenta",
    "awaiting_agents": "cyan",
    "queued": "dim",
    "idle": "blue",
    "done": "dim",
    "error": "bold red",
    "interrupted": "yellow",
    "killed": "red",
}
Cell = str | Text


def short_tool(tool: str | None) -> str:
    """``mcp__deck__wait_for_agents`` is ``wait_for_agents`` in a narrow column."""
    if not tool:
        return ""
    return tool.rsplit("__", 1)[-1] if tool.startswith("mcp__") else tool


def _printable(text: str) -> str:
    """One line, nothing a terminal would act on (a name is the user's text)."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def cells(row: Row, depth: int) -> tuple[Cell, ...]:
    prefix = "  " * (depth - 1) + "└ " if depth else ""
    return (
        _printable(prefix + row.name)[:NAME_WIDTH],
        Text(row.state, style=_STATE_STYLE.get(row.state, "")),
        _printable(row.host)[:HOST_WIDTH],
        _printable(short_tool(row.current_tool))[:TOOL_WIDTH],
        str(row.turns),
        f"${row.cost_usd:.4f}",
        age(row.created_at),
    )


def _plain(value: Cell) -> str:
    return value.plain if isinstance(value, Text) else value


class AgentTable(ScrollView, can_focus=True):
    """The agents, as a tree, one line each under a header that stays in place."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "agent-table--header",
        "agent-table--cursor",
        "agent-table--even-row",
        "agent-table--odd-row",
    }
    # DataTable's look (its default CSS, for the parts this table has).
    DEFAULT_CSS = """
    AgentTable {
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .agent-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .agent-table--header { background-tint: $foreground 5%; }
        }
        &:dark > .agent-table--even-row { background: $surface-darken-1 40%; }
        & > .agent-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .agent-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .agent-table--even-row { background: $surface-lighten-1 50%; }
        & > .agent-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Cursor up", show=False),
        Binding("down", "cursor(1)", "Cursor down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "Top", show=False),
        Binding("end", "last", "Bottom", show=False),
    ]

    class Highlighted(Message):
        """The cursor is on ``agent_id``'s row."""

        def __init__(self, table: AgentTable, agent_id: str) -> None:
            super().__init__()
            self.table = table
            self.agent_id = agent_id

        @property
        def control(self) -> AgentTable:
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: list[str] = []  # the ids of the rows, in order
        self.depths: dict[str, int] = {}  # of the rows shown
        self.drawn: dict[str, tuple[Cell, ...]] = {}  # the cells shown, per row
        self.widths = [cell_len(label) for label in COLUMNS]
        self.hosted = False  # a row had a host: the host column is shown from then on
        self.cursor_row = 0
        self._index: dict[str, int] = {}
        self._strips: dict[str, tuple[tuple[Any, ...], Strip]] = {}  # id: (key, line)
        self._header: tuple[tuple[Any, ...], Strip] | None = None

    # -- what is shown --------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self.shown)

    def get_cell(self, agent_id: str, column: str) -> Cell:
        """The value shown in a cell (KeyError for a row not shown)."""
        return self.drawn[agent_id][COLUMNS.index(column)]

    def draw(
        self, board: Board, order: list[tuple[Row, int]] | None, dirty: set[str], *,
        whole: bool, selected: str | None,
    ) -> None:  # fmt: skip
        """Draw ``order``: every row if ``whole`` or the order changed, else the
        ``dirty`` ones in place (``order`` None: the caller knows it has not changed)."""
        ids = self.shown if order is None else [row.id for row, _ in order]
        if order is not None and (whole or ids != self.shown):
            self._draw_all(order, dirty, whole=whole, selected=selected)
            return
        view = self._view()
        for agent_id in dirty:
            row = board.rows.get(agent_id)
            if row is not None and agent_id in self._index:
                self._put(agent_id, cells(row, self.depths[agent_id]), view)

    def _draw_all(
        self, order: list[tuple[Row, int]], dirty: set[str], *, whole: bool, selected: str | None
    ) -> None:
        """A new set or order of rows; a row kept at its depth and not ``dirty`` keeps
        its cells (unless ``whole``)."""
        drawn, depths = {}, {}
        for row, depth in order:
            kept = self.drawn.get(row.id)
            if whole or kept is None or row.id in dirty or self.depths.get(row.id) != depth:
                kept = cells(row, depth)
                self._widen(kept)
            drawn[row.id], depths[row.id] = kept, depth
        self.drawn, self.depths = drawn, depths
        self.shown = [row.id for row, _ in order]
        self._index = {agent_id: i for i, agent_id in enumerate(self.shown)}
        self._strips.clear()
        self._resize()
        if selected in self._index:
            self._move(self._index[selected], announce=False)
        else:  # as DataTable did: the first row, and the app hears of it
            self._move(0, announce=True)
        self.refresh()

    def _put(self, agent_id: str, values: tuple[Cell, ...], view: range) -> None:
        """One row's new cells: its line drawn again if they changed and it is in
        ``view`` (the rows on screen)."""
        before = self.drawn.get(agent_id)
        if values == before:
            return
        self.drawn[agent_id] = values
        self._strips.pop(agent_id, None)
        if self._widen(values, before):
            self._resize()
            self.refresh()
        elif (index := self._index[agent_id]) in view:
            self.refresh_line(index + 1)  # the line under the header

    def _widen(self, values: tuple[Cell, ...], before: tuple[Cell, ...] | None = None) -> bool:
        """Widen the columns these values (those not as ``before``) do not fit in;
        whether any was."""
        wider = False
        if not self.hosted and values[_HOST]:
            self.hosted = wider = True
        for i, value in enumerate(values):
            if before is not None and before[i] == value:
                continue
            width = cell_len(_plain(value))
            if width > self.widths[i]:
                self.widths[i], wider = width, True
        if wider:
            self._strips.clear()
            self._header = None
        return wider

    def tick_ages(self, board: Board) -> None:
        view = self._view()
        for agent_id in self.shown:
            row, drawn = board.rows.get(agent_id), self.drawn.get(agent_id)
            if row is not None and drawn is not None:
                shown = age(row.created_at)
                if shown != drawn[_AGE]:  # most ages move on rarely ("3h")
                    self._put(agent_id, (*drawn[:_AGE], shown), view)

    # -- the cursor -----------------------------------------------------------------

    def _move(self, index: int, *, announce: bool | None = None) -> None:
        """The cursor to row ``index``; the app hears of it (``Highlighted``) if it
        moved, or if ``announce``; never if ``announce`` is False."""
        if not self.shown:
            self.cursor_row = 0
            return
        index = max(0, min(index, len(self.shown) - 1))
        old, self.cursor_row = self.cursor_row, index
        if old != index:  # the two lines' cached strips are keyed on the cursor
            view = self._view()
            for row in (old, index):
                if row in view:
                    self.refresh_line(row + 1)
        self._scroll_to_cursor()
        if announce or (announce is None and old != index):
            self.post_message(self.Highlighted(self, self.shown[index]))

    def move_to(self, agent_id: str) -> None:
        """Put the cursor on an agent's row (no message: the caller knows)."""
        if agent_id in self._index:
            self._move(self._index[agent_id], announce=False)

    def _rows_in_view(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # less the header

    def _scroll_to_cursor(self) -> None:
        top, rows = self.scroll_offset.y, self._rows_in_view()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + rows:
            self.scroll_to(y=self.cursor_row - rows + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        if self.shown:
            self._move(self.cursor_row + step)

    def action_page(self, step: int) -> None:
        if self.shown:
            self._move(self.cursor_row + step * self._rows_in_view())

    def action_first(self) -> None:
        if self.shown:
            self._move(0)

    def action_last(self) -> None:
        if self.shown:
            self._move(len(self.shown) - 1)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:  # the header
            return
        index = offset.y - 1 + self.scroll_offset.y
        if 0 <= index < len(self.shown):
            self._move(index)

    # -- drawing --------------------------------------------------------------------

    def _table_width(self) -> int:
        shown = [w for i, w in enumerate(self.widths) if self.hosted or i != _HOST]
        return sum(shown) + 2 * PADDING * len(shown)

    def _resize(self) -> None:
        width = self._table_width()
        self.virtual_size = Size(width, len(self.shown) + 1)

    def _view(self) -> range:
        """The indices of the rows on screen."""
        top = self.scroll_offset.y
        return range(top, top + self._rows_in_view())

    def on_resize(self, event: events.Resize) -> None:
        self._strips.clear()
        self._header = None
        self._scroll_to_cursor()

    def _styles(self) -> tuple[Style, Style, Style, Style]:
        """The header's, an even row's, an odd row's and the cursor's styles."""
        get = self.get_component_rich_style
        return (
            get("agent-table--header"),
            get("agent-table--even-row"),
            get("agent-table--odd-row"),
            get("agent-table--cursor"),
        )

    def _line(self, values: tuple[Cell, ...], style: Style, post: Style | None) -> Strip:
        """A row (or the header) as one line: each cell padded to its column, the rest
        of the width in the row's style."""
        segments = []
        pad = " " * PADDING
        for i, (value, width) in enumerate(zip(values, self.widths, strict=True)):
            if i == _HOST and not self.hosted:
                continue
            if isinstance(value, Text):
                own = value.style
                text = value.plain
                text_style = style + (own if isinstance(own, Style) else Style.parse(own))
            else:
                text, text_style = value, style
            if post is not None:
                text_style += post
            segments += [
                Segment(pad, style),
                Segment(text, text_style),
                Segment(" " * (width - cell_len(text)) + pad, style),
            ]
        table = self._table_width()
        width = max(table, self.scrollable_content_region.width)
        segments.append(Segment(" " * (width - table), style))
        return Strip(segments, width).simplify()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        header, even, odd, cursor = self._styles()
        base = self.rich_style
        if y == 0:
            key: tuple[Any, ...] = (base, header, tuple(self.widths), self.hosted, width)
            if self._header is None or self._header[0] != key:
                self._header = (key, self._line(COLUMNS, base + header, None))
            strip = self._header[1]
        else:
            index = y - 1 + scroll_y
            if index >= len(self.shown):
                return Strip.blank(width, base)
            agent_id = self.shown[index]
            on_cursor = index == self.cursor_row
            key = (base, even if index % 2 == 0 else odd, on_cursor and cursor, width)
            cached = self._strips.get(agent_id)
            if cached is None or cached[0] != key:
                style = base + key[1] + (cursor if on_cursor else Style())
                post = Style.from_color(cursor.color) if on_cursor else None
                cached = (key, self._line(self.drawn[agent_id], style, post))
                self._strips[agent_id] = cached
            strip = cached[1]
        return strip.crop_extend(scroll_x, scroll_x + width, base)
