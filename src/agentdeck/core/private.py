"""``<private>…</private>``: what the user marked is dropped before anything is kept."""

from __future__ import annotations

import re

__all__ = ["strip_private"]


_PRIVATE_TAG = re.compile(r"<(/?)private\s{0,32}+>", re.IGNORECASE)
_TAG_MAX = len("</private>") + 32  # the longest tag


def strip_private(text: str) -> str:
    """``text`` without its ``<private>…</private>`` parts, tags included.

    Blocks nest (what is inside the outermost block goes); an unclosed
    ``<private>`` drops the rest of the text; a stray ``</private>`` is removed.
    Dropping a block can join two halves of a tag (``<priv<private>x</private>ate>``):
    the joined tag counts like any other, so no tag is ever left. One pass, linear
    time, however the tags are nested or split.
    """
    if not _PRIVATE_TAG.search(text):
        return text
    kept = _Kept(text)
    depth, pos = 0, 0
    for m in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            depth = kept.add(pos, m.start())
        depth = max(0, depth - 1) if m[1] else depth + 1
        pos = m.end()
    if depth == 0:
        kept.add(pos, len(text))
    return kept.text()


class _Kept:
    """The kept ranges of a text, in which no tag is ever left (see ``strip_private``)."""

    _LOOK = _TAG_MAX - 1  # a joined tag has at most this much on either side

    def __init__(self, source: str) -> None:
        self.source = source
        self.ranges: list[list[int]] = []  # [start, end) of source, none empty
        self.tail = ""  # the last _LOOK characters kept

    def add(self, start: int, end: int) -> int:
        """Keep ``source[start:end]`` (no tag in it): 1 if it joins into an opening tag.

        A joined tag spans the end of what is kept and the start of the new part,
        so a tag's length on either side is all there is to look at.
        """
        while start < end:
            head = self.source[start : min(end, start + self._LOOK)]
            joined = _PRIVATE_TAG.search(self.tail + head) if ">" in head else None
            if joined is None:
                self.ranges.append([start, end])
                self.tail = (self.tail + self.source[max(start, end - self._LOOK) : end])[
                    -self._LOOK :
                ]
                return 0
            self._drop(len(self.tail) - joined.start())
            start += joined.end() - len(self.tail)
            self.tail = self.tail[: joined.start()]
            self._refill()
            if not joined[1]:
                return 1  # the rest of the part is inside the block it opens
        return 0

    def text(self) -> str:
        return "".join(self.source[start:end] for start, end in self.ranges)

    def _drop(self, size: int) -> None:
        while size > 0:
            last = self.ranges[-1]
            taken = min(size, last[1] - last[0])
            last[1] -= taken
            size -= taken
            if last[0] == last[1]:
                self.ranges.pop()

    def _refill(self) -> None:
        """After a drop: the tail again holds the last _LOOK characters kept."""
        parts, size = [], self._LOOK
        for start, end in reversed(self.ranges):
            parts.append(self.source[max(start, end - size) : end])
            size -= end - start
            if size <= 0:
                break
        self.tail = "".join(reversed(parts))
