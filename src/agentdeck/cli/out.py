"""The CLI's output, cheap to import: Rich loads only when something needs it.

JSON goes out as plain indented text (what Rich prints for it off a terminal); a
line of plain text needs no console; tables and styled event lines are written
by ``styled`` as Rich would write them, by Rich itself when they need it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console

    from agentdeck.cli.styled import Line, Table
    from agentdeck.errors import AgentdeckError


_consoles: dict[bool, Console] = {}


def console() -> Console:
    """Rich's console on stdout, made once."""
    return _console(stderr=False)


def console_err() -> Console:
    return _console(stderr=True)


def _console(*, stderr: bool) -> Console:
    if stderr not in _consoles:
        from rich.console import Console

        _consoles[stderr] = Console(stderr=stderr, highlight=False, soft_wrap=True)
    return _consoles[stderr]


def print_json(value: Any) -> None:
    from agentdeck import jsontext

    if sys.stdout.isatty():
        console().print_json(jsontext.dumps(value))
    else:
        say(jsontext.dumps(value, indent=2))


def show(item: Line | Table) -> None:
    """A styled line or table (``render``'s), as ``console()`` would print it."""
    from agentdeck.cli import styled

    styled.write(item, sys.stdout)


def say(text: str) -> None:
    """One line, as it is (no markup)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def report(exc: AgentdeckError) -> int:
    """An error the user can act on: one line, a hint, the exit code."""
    if sys.stderr.isatty():
        from rich.markup import escape

        console_err().print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.hint:
            console_err().print(f"  {escape(exc.hint)}", highlight=False)
    else:
        sys.stderr.write(f"error: {exc.message}\n" + (f"  {exc.hint}\n" if exc.hint else ""))
    return exc.exit_code
