"""Search snippets: the index marks matched terms ``[like this]``."""

from __future__ import annotations


def _marks(snippet: str) -> list[tuple[int, int]]:
    """Where ``[term]`` marks are (``\\[([^\\[\\]]*)\\]``), as (start, end) of each
    bracketed span; without ``re``, whose import costs the CLI's quick path ~10 ms."""
    found: list[tuple[int, int]] = []
    at = snippet.find("[")
    while at >= 0:
        close = snippet.find("]", at + 1)
        if close < 0:
            break
        reopen = snippet.find("[", at + 1, close)
        if reopen >= 0:  # a `[` before the `]`: the mark starts there, if anywhere
            at = reopen
            continue
        found.append((at, close + 1))
        at = snippet.find("[", close + 1)
    return found


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A snippet as ``(text, matched)`` parts; each surface renders them its own way."""
    parts: list[tuple[str, bool]] = []
    at = 0
    for start, end in _marks(snippet):
        if start > at:
            parts.append((snippet[at:start], False))
        parts.append((snippet[start + 1 : end - 1], True))
        at = end
    if at < len(snippet):
        parts.append((snippet[at:], False))
    return parts
