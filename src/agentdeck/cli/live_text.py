"""The assistant's text on a terminal as it is written, and its event not twice.

A follower on a terminal asks the stream for the partial edits
(``core.partial.PartialText``, as dicts: ``block``, ``offset``, ``text``) and hands
each to ``LiveText.partial``: the words are written as they come, on the line the
text's event would have taken. ``LiveText.event`` takes every event after that:
the ``assistant_text`` that holds the block whole ends the line with what was not
shown yet (the event is then not printed again: it returns True); any other event
ends the line first. An edit that rewrites what was shown (a secret redacted that
only a later word revealed) stops the streaming of the block: the event prints it
whole.

Cheap to import (the quick path loads it): the standard library only.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

BULLET = "● "  # as ``core.log_lines`` draws an assistant_text


class LiveText:
    def __init__(
        self,
        file: IO[str] | None = None,
        *,
        colour: bool | None = None,
        on_start: Callable[[], None] | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        """``file``: stdout when None, as it is at each write (a spinner on it
        replaces it while it runs). ``on_start``/``on_end``: a block starts and ends
        being written (a spinner pauses meanwhile: it would redraw over the line)."""
        self._file = file
        colour = self.file.isatty() and not _no_colour() if colour is None else colour
        self._bullet = f"\x1b[1m{BULLET}\x1b[0m" if colour else BULLET
        self._on_start = on_start
        self._on_end = on_end
        self._block: str | None = None  # the block being written on the line
        self._shown = ""  # what the line shows of it
        self._given_up: set[str] = set()  # blocks left to their event

    @property
    def file(self) -> IO[str]:
        return self._file or sys.stdout

    @property
    def writing(self) -> bool:
        return self._block is not None

    def partial(self, edit: dict[str, Any]) -> None:
        block, offset, text = str(edit["block"]), int(edit["offset"]), str(edit["text"])
        if block in self._given_up or edit.get("parent_tool_use_id") is not None:
            return  # (a subagent's text: its event shows it)
        if block != self._block:
            self._finish("\n")
            if offset != 0:  # joined mid-block: its event shows it
                self._given_up.add(block)
                return
            if self._on_start is not None:
                self._on_start()
            self._block, self._shown = block, ""
            self._write(self._bullet)
        if offset != len(self._shown):  # a rewrite (or an edit missed): the event will do
            self._given_up.add(block)
            self._finish("…\n")
            return
        self._shown += text
        self._write(text)

    def event(self, event: dict[str, Any]) -> bool:
        """Take an event; True when it was shown already (do not print it)."""
        if self._block is None:
            return False
        if event.get("type") == "assistant_text":
            whole = str((event.get("data") or {}).get("text", ""))
            if self._shown and whole.startswith(self._shown):
                self._finish(whole[len(self._shown) :] + "\n")
                return True
        self._finish("\n")
        return False

    def close(self) -> None:
        """The follower stops: a line being written is ended."""
        self._finish("\n")

    def _finish(self, tail: str) -> None:
        if self._block is None:
            return
        self._write(tail)
        self._block, self._shown = None, ""
        if self._on_end is not None:
            self._on_end()

    def _write(self, text: str) -> None:
        self.file.write(text)
        self.file.flush()


def _no_colour() -> bool:
    import os

    return os.environ.get("NO_COLOR", "") != ""


def wanted(as_json: bool, file: IO[str] | None = None) -> bool:
    """Whether a follower shows the text being written: on a terminal, not JSON."""
    if as_json:
        return False
    try:
        return (file or sys.stdout).isatty()
    except ValueError:
        return False
