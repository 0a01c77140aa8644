"""``styled`` writes what a Rich console writes: the same text off a terminal, the
same characters in the same styles on one, and hands Rich what it cannot."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from agentdeck.cli.styled import Line, Table, Terminal, render, terminal, write

STYLES = ("", "bold", "dim", "red", "bold blue", "bold yellow", "cyan", "dim green", "magenta")
# Cell text: mostly what agentdeck shows (ids, names, costs, tree marks), some of it
# what the quick renderer leaves to Rich (wide characters, markup, newlines, tabs).
ALPHABET = st.sampled_from([*"abc xyz-_.$0189()/└é", "\n", "[", ":", "\t", "日", "\r"])
TEXT = st.text(ALPHABET, max_size=30)
LINE = st.lists(st.tuples(TEXT, st.sampled_from(STYLES)), max_size=4).map(
    lambda spans: Line.assemble(*spans)
)
CELL = st.one_of(TEXT, LINE)
# What it writes itself, wrapped: words of plain text, too wide for the terminal.
WORDS = st.text(st.sampled_from([*"ab xyz-$0. └é", "\n"]), max_size=60)
WIDE_CELL = st.one_of(
    WORDS,
    st.lists(st.tuples(WORDS, st.sampled_from(STYLES)), max_size=3).map(
        lambda spans: Line.assemble(*spans)
    ),
)


@st.composite
def tables(draw: st.DrawFn, cells: st.SearchStrategy[str | Line] = CELL) -> Table:
    count = draw(st.integers(1, 6))
    names = [f"C{i}" + draw(st.sampled_from(["", "OLUMN"])) for i in range(count)]
    right = frozenset(draw(st.lists(st.sampled_from(names), max_size=count)))
    grid = draw(st.booleans())
    table = Table(names, right=right, grid=grid, gap=draw(st.integers(1, 3)) if grid else 2)
    for _ in range(draw(st.integers(0, 5))):
        table.add_row(*draw(st.lists(cells, min_size=count, max_size=count)))
    return table


def by_rich(item: Line | Table, *, width: int, tty: bool) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, highlight=False, soft_wrap=True,
        force_terminal=tty, color_system="standard" if tty else None,
    )  # fmt: skip
    console.print(item.rich())
    return buffer.getvalue()


SGR = re.compile(r"\x1b\[([0-9;]*)m")


def screen(text: str) -> list[tuple[str, frozenset[str]]]:
    """What a terminal shows: each character with its SGR attributes (spaces
    plain, and none at a line's end: a blank cell shows no style here)."""
    shown: list[tuple[str, frozenset[str]]] = []
    attrs: frozenset[str] = frozenset()
    at = 0
    for match in [*SGR.finditer(text), None]:
        end = match.start() if match else len(text)
        for ch in text[at:end]:
            shown.append((ch, frozenset() if ch in " \n" else attrs))
        if match is None:
            break
        codes = match.group(1).split(";")
        attrs = frozenset() if codes in (["0"], [""]) else attrs | set(codes)
        at = match.end()
    return [cell for line in _lines(shown) for cell in line]


def _lines(shown: list[tuple[str, frozenset[str]]]) -> list[list[tuple[str, frozenset[str]]]]:
    """Each line without the spaces that end it (a terminal shows none)."""
    lines: list[list[tuple[str, frozenset[str]]]] = [[]]
    for cell in shown:
        if cell[0] == "\n":
            while lines[-1] and lines[-1][-1][0] == " ":
                lines[-1].pop()
            lines[-1].append(cell)
            lines.append([])
        else:
            lines[-1].append(cell)
    return lines


@settings(max_examples=300, deadline=None)
@given(item=st.one_of(tables(), LINE), width=st.integers(10, 120))
def test_off_a_terminal_the_text_is_richs(item: Line | Table, width: int) -> None:
    mine = render(item, Terminal(colour=False, no_colour=False, width=width))
    if mine is not None:
        assert mine == by_rich(item, width=width, tty=False)


@settings(max_examples=300, deadline=None)
@given(item=st.one_of(tables(), LINE), width=st.integers(10, 120))
def test_on_a_terminal_the_screen_is_richs(item: Line | Table, width: int) -> None:
    mine = render(item, Terminal(colour=True, no_colour=False, width=width))
    if mine is not None:
        assert screen(mine) == screen(by_rich(item, width=width, tty=True))


@settings(max_examples=300, deadline=None)
@given(table=tables(WIDE_CELL), width=st.integers(8, 60), tty=st.booleans())
def test_a_table_too_wide_is_wrapped_as_rich_wraps_it(table: Table, width: int, tty: bool) -> None:
    mine = render(table, Terminal(colour=tty, no_colour=False, width=width))
    if mine is not None:
        theirs = by_rich(table, width=width, tty=tty)
        assert screen(mine) == screen(theirs) if tty else mine == theirs


def test_what_agentdeck_prints_is_written_without_rich() -> None:
    table = Table(["ID", "NAME", "COST"], right=frozenset({"COST"}))
    table.add_row("a1b2", Line.assemble("└ ", ("child", "bold")), "$0.0120")
    where = Terminal(colour=False, no_colour=False, width=80)
    assert render(table, where) == "ID    NAME        COST\na1b2  └ child  $0.0120\n"
    assert render(table, where) == by_rich(table, width=80, tty=False)
    line = Line.assemble(("● ", "bold"), "hello\r\nworld")
    assert render(line, where) == "● hello\nworld\n"
    coloured = render(line, Terminal(colour=True, no_colour=False, width=80))
    assert coloured == "\x1b[1m● \x1b[0mhello\nworld\n"
    no_colour = Terminal(colour=True, no_colour=True, width=80)
    assert render(Line("x", "bold red"), no_colour) == "\x1b[1mx\x1b[0m\n"


def test_what_it_cannot_write_it_leaves_to_rich_and_wraps_the_rest() -> None:
    where = Terminal(colour=False, no_colour=False, width=20)
    wide = Table(["ID", "PROMPT"])
    wide.add_row("a1", "a prompt longer than the terminal is wide")
    assert render(wide, where) == by_rich(wide, width=20, tty=False)  # wrapped as Rich wraps
    assert render(wide, where) == (
        "ID  PROMPT          \na1  a prompt longer \n    than the        \n    terminal is wide\n"
    )
    markup = Table(["NAME"])
    markup.add_row("[bold]x[/]")
    assert render(markup, where) is None  # Rich reads markup in a str cell
    assert render(Line("a\tb"), where) is None  # Rich expands tabs
    buffer = io.StringIO()
    write(markup, buffer)
    assert buffer.getvalue() == by_rich(markup, width=terminal(buffer).width, tty=False)  # type: ignore[union-attr]


def test_the_terminal_is_judged_as_rich_judges_it() -> None:
    pipe = io.StringIO()
    assert terminal(pipe, {"COLUMNS": "123"}) == Terminal(False, False, 123)
    assert terminal(pipe, {"FORCE_COLOR": "1", "COLUMNS": "50"}) == Terminal(True, False, 50)
    assert terminal(pipe, {"TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "50"}) == Terminal(
        True, True, 50
    )
    assert terminal(pipe, {"FORCE_COLOR": "1", "TERM": "dumb"}) is None  # Rich's own case


def test_a_followed_agent_ends_with_its_name_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    from agentdeck.cli import remote_follow

    agent = {"id": "a1", "name": "[bold]x:smile:", "state": "done", "turns": 2, "cost_usd": 0.5}
    assert remote_follow.report(agent, {"is_error": False}, as_json=False) == 0
    assert capsys.readouterr().out == "agent a1 ([bold]x:smile:) done · 2 turns · $0.5000\n"


@given(st.text(alphabet=" \t\nab\xa0\u2003", max_size=12), st.integers(0, 12))
def test_words_are_where_rich_s_pattern_finds_them(plain: str, at: int) -> None:
    from agentdeck.cli.fit import _word

    match = re.compile(r"\s*\S+\s*").match(plain, min(at, len(plain)))
    assert _word(plain, min(at, len(plain))) == (match.span() if match else None)
