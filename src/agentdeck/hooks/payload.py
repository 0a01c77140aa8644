"""A hook payload as the bridge reads it: attacker-controlled JSON, bounded.

The model writes tool inputs, so a payload may nest absurdly deep, carry lone
surrogates (JSON can, UTF-8 cannot), or put any type where a string belongs.
"""

from __future__ import annotations

import re
from typing import Any

# No hook payload Claude Code sends nests this deep; below it, our own recursion
# (redaction, JSON) stays far from Python's limit. Deeper: the client's fallback.
MAX_NESTING = 100
MAX_PID = 2**22  # Linux's pid_max ceiling; a pid outside 1..MAX_PID is no process
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_of(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def object_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {} if value is None else {"value": value}


def pid_of(value: str | None) -> int | None:
    try:
        pid = int(value) if value else None
    except ValueError:
        return None
    return pid if pid is not None and 0 < pid <= MAX_PID else None


def shape(value: Any) -> tuple[int, bool]:
    """How deep lists and objects nest in ``value`` (counted without recursing,
    stopping past ``MAX_NESTING``), and whether a string holds a lone surrogate."""
    deepest, surrogates, todo = 0, False, [(value, 0)]
    while todo and deepest <= MAX_NESTING:
        item, level = todo.pop()
        if isinstance(item, str):
            surrogates = surrogates or (not item.isascii() and bool(_SURROGATE.search(item)))
        elif isinstance(item, dict):
            deepest = max(deepest, level + 1)
            todo.extend((k, level) for k in item)
            todo.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level + 1)
            todo.extend((v, level + 1) for v in item)
    return deepest, surrogates


def mended(value: Any) -> Any:
    """``value`` with each lone surrogate replaced by U+FFFD (nesting is bounded)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {mended(k): mended(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mended(v) for v in value]
    return value
