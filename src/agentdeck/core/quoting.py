"""What an error may say about a file it read: names, never contents. Pure.

A loader's error goes to whoever asked for the file — the API's caller, the model
whose template named it — who may not be able to read it. So an error names the
file, the line and the key path, and shows a key only when it looks like a key
(a short word); a value is never shown.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}")


def key_shown(key: object, *, ticks: bool = True) -> str:
    """``key`` (in backticks) when it is a short word, else a placeholder."""
    if isinstance(key, str) and _KEY.fullmatch(key):
        return f"`{key}`" if ticks else key
    return "(a key that is no word)"


def without_quotes(problem: str) -> str:
    """``problem`` with every backticked part (a quoted rule, a path) left out."""
    return re.sub(r"`[^`]*`", "…", problem)


_QUOTED = re.compile(r"`([^`]*)`|'([^'\n]*)'|\"([^\"\n]*)\"")


def scrubbed(problem: str, text: str, vocabulary: frozenset[str]) -> str:
    """``problem`` with every quoted part that ``text`` (the file) holds left
    out, unless it is a word of ``vocabulary`` (the format's own keys): a backstop
    for messages written without this module in mind."""

    def keep(match: re.Match[str]) -> str:
        inner = next(g for g in match.groups() if g is not None)
        if inner in vocabulary or not inner.strip() or inner not in text:
            return match.group(0)
        return "…"

    return _QUOTED.sub(keep, problem)
