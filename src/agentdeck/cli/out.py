"""The CLI's output, cheap to import: Rich loads only when something needs it.

JSON goes out as plain indented text (what Rich prints for it off a terminal); a
line of plain text needs no console; tables and styled event lines are written
by ``styled`` as Rich would write them, by Rich itself when they need it.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from agentdeck.cli.styled import Line, Table
    from agentdeck.errors import AgentdeckError


@functools.cache
def console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@functools.cache
def console_err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(value: Any) -> None:
    if sys.stdout.isatty():
        console().print_json(json.dumps(value))
    else:
        say(json.dumps(value, indent=2, ensure_ascii=False))


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
