"""Styled lines and borderless tables, written without Rich when that is safe.

Importing Rich's console and table machinery costs a command more than the rest
of its work together (tens of milliseconds on a small machine), and what the CLI
prints is simple: lines of styled text and borderless tables of short cells.
So ``render`` builds these small records, and ``write`` prints them the way a
Rich console (``highlight=False, soft_wrap=True``) would: the same characters,
the same column widths, colour (standard ANSI codes) only on a terminal.

A table wider than the terminal is narrowed and wrapped as Rich does it
(``fit``). Whenever Rich would do something this module does not (wide or
combining characters; a cell Rich would read as markup or an emoji code; tabs;
a column squeezed to nothing; an unusual terminal), ``write`` hands the record
to Rich instead: the output stays exactly Rich's, only slower.
``tests/cli/test_styled.py`` compares the two on generated tables and lines.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: its import (``re`` and ``enum`` too) costs ~10 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

# What Rich's Text removes from any text it is given (bell, backspace, vertical
# tab, form feed, carriage return).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
_SGR = {"bold": "1", "dim": "2", "italic": "3", "underline": "4"}
_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")


class Line:
    """A line of text in styled runs, like Rich's ``Text`` (``plain`` included)."""

    __slots__ = ("spans",)

    def __init__(self, text: str = "", style: str = "") -> None:
        self.spans: list[tuple[str, str]] = []
        self.append(text, style)

    @classmethod
    def assemble(cls, *parts: str | tuple[str, str]) -> Line:
        line = cls()
        for part in parts:
            text, style = (part, "") if isinstance(part, str) else part
            line.append(text, style)
        return line

    def append(self, text: str, style: str = "") -> Line:
        if text:
            self.spans.append((text.translate(_STRIPPED), style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Line.assemble(*{self.spans!r})"

    def rich(self) -> Text:
        from rich.text import Text

        return Text.assemble(*self.spans)


Cell = str | Line  # a str cell is read by Rich as markup, as a Rich table would read it


class Table:
    """Rich's ``Table(box=None, pad_edge=False)`` (``grid``: ``Table.grid(padding=(0, gap))``).

    (No dataclasses here: their import costs the quick path ~10 ms.)
    """

    def __init__(
        self,
        columns: Sequence[str],
        right: frozenset[str] = frozenset(),
        grid: bool = False,
        gap: int = 2,
    ) -> None:
        self.columns, self.right, self.grid, self.gap = columns, right, grid, gap
        self.rows: list[list[Cell]] = []

    def __repr__(self) -> str:
        return (
            f"Table({self.columns!r}, right={self.right!r}, grid={self.grid}, rows={self.rows!r})"
        )

    def add_row(self, *cells: Cell) -> None:
        self.rows.append(list(cells))

    def rich(self) -> RichTable:
        from rich.table import Table as RichTable

        if self.grid:
            table = RichTable.grid(padding=(0, self.gap))
        else:
            table = RichTable(box=None, pad_edge=False)
        for col in self.columns:
            table.add_column(col if not self.grid else "", justify=self._justify(col))
        for row in self.rows:
            table.add_row(*(c.rich() if isinstance(c, Line) else c for c in row))
        return table

    def _justify(self, col: str) -> Any:
        return "right" if col in self.right else "left"


# --- where the output goes ------------------------------------------------------------


class Terminal:
    """What a Rich console on ``file`` would make of it: colour, width; or None
    (``terminal``) when it is a case left to Rich. (A plain class: a named tuple
    would import ``typing`` or ``collections``.)"""

    __slots__ = ("colour", "no_colour", "width")

    def __init__(self, colour: bool, no_colour: bool, width: int) -> None:
        self.colour, self.no_colour, self.width = colour, no_colour, width

    def _key(self) -> tuple[bool, bool, int]:
        return (self.colour, self.no_colour, self.width)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Terminal) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Terminal(colour={self.colour}, no_colour={self.no_colour}, width={self.width})"


def terminal(file: TextIO, environ: Any = os.environ) -> Terminal | None:
    if environ.get("JUPYTER_COLUMNS") is not None or "TTY_INTERACTIVE" in environ:
        return None
    compatible, force = environ.get("TTY_COMPATIBLE", ""), environ.get("FORCE_COLOR")
    if compatible in ("0", "1"):
        is_terminal = compatible == "1"
    elif force is not None:
        is_terminal = force != ""
    else:
        try:
            is_terminal = file.isatty()
        except ValueError:
            is_terminal = False
    if is_terminal and environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return None
    width = 0
    for fd in (0, 1, 2):  # Rich asks the standard streams, in this order
        try:
            width = os.get_terminal_size(fd).columns
            break
        except (AttributeError, ValueError, OSError):
            continue
    columns = environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return Terminal(is_terminal, environ.get("NO_COLOR", "") != "", width or 80)


# --- rendering ------------------------------------------------------------------------


def write(item: Line | Table, file: TextIO | None = None) -> None:
    """Print ``item`` as a Rich console would (``out.console()``'s settings)."""
    file = file or sys.stdout
    where = terminal(file)
    text = None if where is None else render(item, where)
    if text is None:
        rich_console(file).print(item.rich())
    else:
        file.write(text)
        file.flush()


def rich_console(file: TextIO) -> Console:
    from rich.console import Console

    return Console(file=file, highlight=False, soft_wrap=True)


def render(item: Line | Table, where: Terminal) -> str | None:
    """The text Rich would write for ``item``, or None when Rich must do it."""
    if isinstance(item, Line):
        return _render_line(item, where)
    return _render_table(item, where)


def simple(text: str) -> bool:
    """One cell per character, as Rich measures it: printable Latin text and box
    drawing. Anything else (wide, combining, control) is left to Rich."""
    return all(" " <= ch <= "~" or "\xa1" <= ch < "\u0300" or "─" <= ch <= "╿" for ch in text)


def _sgr(style: str, where: Terminal) -> str:
    if not where.colour or not style:
        return ""
    codes: list[str] = []
    colour = ""
    for word in style.split():
        if word in _SGR:
            codes.append(_SGR[word])
        elif word in _COLOURS:
            colour = str(30 + _COLOURS.index(word))
        else:
            raise _Unsupported(word)
    codes.sort()
    if colour and not where.no_colour:
        codes.append(colour)
    return ";".join(codes)


class _Unsupported(Exception):
    """A style this module does not write: Rich does."""


def _styled(text: str, style: str, where: Terminal) -> str:
    sgr = _sgr(style, where)
    return f"\x1b[{sgr}m{text}\x1b[0m" if sgr and text else text


def _render_line(line: Line, where: Terminal) -> str | None:
    if any("\t" in text for text, _ in line.spans):
        return None  # Rich expands tabs
    try:
        return "".join(
            "".join(_styled(t, s, where) for t, s in spans) + "\n" for _, spans in _lines_of(line)
        )
    except _Unsupported:
        return None


def _markup(text: str) -> bool:
    """Would Rich read more than the text in a str cell (markup, an emoji code)?"""
    return "[" in text or text.count(":") >= 2


def _render_table(table: Table, where: Terminal) -> str | None:
    header: list[list[Cell]] = [] if table.grid else [[Line(c, "bold") for c in table.columns]]
    rows: list[list[Line]] = []
    for row in [*header, *table.rows]:
        cells: list[Line] = []
        for cell in row:
            if isinstance(cell, str):
                if _markup(cell):
                    return None
                cell = Line(cell)
            if not all(simple(text) for text, _ in cell.spans):
                return None
            cells.append(cell)
        rows.append(cells)
    count = len(table.columns)
    if count == 0 or any(len(r) != count for r in rows):
        return None
    from agentdeck.cli import fit

    split = [[_lines_of(cell) for cell in row] for row in rows]
    content = [max((len(ln[0]) for r in split for ln in r[c]), default=0) for c in range(count)]
    pads = _padding(count, table.gap if table.grid else 1, collapse=table.grid)
    widths = fit.column_widths(content, pads, where.width)
    inner = [w - left - right for w, (left, right) in zip(widths, pads, strict=True)]
    squeezed = [i < 1 and i < w for i, w in zip(inner, content, strict=True)]
    if sum(widths) > where.width or any(squeezed):
        return None  # a column squeezed to nothing: Rich's own corner
    justify = [table._justify(col) for col in table.columns]
    out: list[str] = []
    try:
        for row_index, cells_lines in enumerate(split):
            row_style = "bold" if header and row_index == 0 else ""
            wrapped = [
                [ln for plain, runs in lines for ln in fit.wrap(plain, runs, inner[c], justify[c])]
                for c, lines in enumerate(cells_lines)
            ]
            for i in range(max(len(lines) for lines in wrapped)):
                parts: list[str] = []
                for c, lines in enumerate(wrapped):
                    left, right = pads[c]
                    plain, spans = lines[i] if i < len(lines) else ("", [])
                    fill = " " * (inner[c] - len(plain))
                    body = "".join(_styled(t, s, where) for t, s in spans)
                    body = fill + body if justify[c] == "right" else body + fill
                    parts.append(_styled(" " * left, row_style, where) + body)
                    parts.append(_styled(" " * right, row_style, where))
                out.append("".join(parts) + "\n")
    except _Unsupported:
        return None
    return "".join(out)


def _lines_of(cell: Line) -> list[tuple[str, list[tuple[str, str]]]]:
    """The cell's lines, each as (plain text, styled runs)."""
    lines: list[tuple[str, list[tuple[str, str]]]] = [("", [])]
    for text, style in cell.spans:
        for i, part in enumerate(text.split("\n")):
            if i:
                lines.append(("", []))
            if part:
                plain, spans = lines[-1]
                lines[-1] = (plain + part, [*spans, (part, style)])
    return lines


def _padding(count: int, gap: int, *, collapse: bool) -> list[tuple[int, int]]:
    """Each column's (left, right) padding, as Rich's table pads a borderless row
    without padding at its edges (``collapse``: a grid's adjacent paddings merge)."""
    pads: list[tuple[int, int]] = []
    for c in range(count):
        left, right = gap, gap
        if collapse and c:
            left = max(0, left - right)
        if c == 0:
            left = 0
        if c == count - 1:
            right = 0
        pads.append((left, right))
    return pads
