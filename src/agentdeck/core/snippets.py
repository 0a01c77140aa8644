"""Search snippets: the index marks matched terms ``[like this]``."""

from __future__ import annotations

import re

_MARK = re.compile(r"\[([^\[\]]*)\]")


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A snippet as ``(text, matched)`` parts; each surface renders them its own way."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for match in _MARK.finditer(snippet):
        if match.start() > at:
            parts.append((snippet[at : match.start()], False))
        parts.append((match.group(1), True))
        at = match.end()
    if at < len(snippet):
        parts.append((snippet[at:], False))
    return parts
