"""Rich's way of fitting a table to the terminal, for ``styled``'s tables.

When a table is wider than the terminal, Rich narrows its widest columns first
(``Table._collapse_widths``), then all of them evenly (``ratio_reduce``), and
wraps each cell's text at word boundaries (``divide_line``, without folding: a
word longer than its column is cut with an ellipsis). This is that, step for
step, for text of one cell per character (``styled.simple``), so that a long
snippet in ``memory search`` or a long prompt in ``show`` is laid out as Rich
lays it out, without importing it. ``tests/cli/test_styled.py`` compares them.
"""

from __future__ import annotations

Runs = list[tuple[str, str]]  # (text, style)


def _word(plain: str, at: int) -> tuple[int, int] | None:
    """Where the regular expression ``\\s*\\S+\\s*`` matches at ``at`` (Rich's
    ``divide_line`` words), or None; without ``re``, whose import (``enum`` with
    it) would cost the CLI's quick path ~10 ms."""
    end, size = at, len(plain)
    while end < size and plain[end].isspace():
        end += 1
    if end == size:
        return None
    while end < size and not plain[end].isspace():
        end += 1
    while end < size and plain[end].isspace():
        end += 1
    return at, end


def column_widths(content: list[int], pads: list[tuple[int, int]], max_width: int) -> list[int]:
    """Each column's width, padding included (``Table._calculate_column_widths``
    for columns without a fixed width, ``no_wrap`` or ``expand``)."""
    widths = [
        _measure(max_width, w, left + right) or 1
        for w, (left, right) in zip(content, pads, strict=True)
    ]
    if sum(widths) <= max_width:
        return widths
    widths = _collapse(widths, max_width)
    if sum(widths) > max_width:  # Rich's last resort: every column narrowed alike
        widths = _ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
    return [
        _measure(width, w, left + right)
        for width, w, (left, right) in zip(widths, content, pads, strict=True)
    ]


def _measure(width: int, content: int, extra: int) -> int:
    """A column's width measured again within ``width`` (``Padding``'s measure)."""
    if width < 1:
        return 0
    if width - extra < 1:
        return width
    measured = min(min(content, width - extra) + extra, width)
    return measured if measured >= 1 else 0


def _collapse(widths: list[int], max_width: int) -> list[int]:
    total = sum(widths)
    excess = total - max_width
    while total and excess > 0:
        widest = max(widths)
        second = max((w if w != widest else 0) for w in widths)
        ratios = [1 if w == widest else 0 for w in widths]
        if not any(ratios) or not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result: list[int] = []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(most, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def breaks(plain: str, width: int) -> list[int]:
    """Where Rich breaks a line to fit ``width`` (``divide_line``, ``fold=False``)."""
    found: list[int] = []
    offset = 0
    word = _word(plain, 0)
    while word is not None:
        start, end = word
        text = plain[start:end]
        length = len(text.rstrip())
        if width - offset >= length:
            offset += len(text)
        elif length > width:  # longer than a line: on its own line, cut later
            if start:
                found.append(start)
            offset = len(text)
        elif offset and start:
            found.append(start)
            offset = len(text)
        word = _word(plain, end)
    return found


def cut(runs: Runs, start: int, end: int) -> Runs:
    """The runs of ``plain[start:end]``."""
    kept: Runs = []
    at = 0
    for text, style in runs:
        lo, hi = max(start, at), min(end, at + len(text))
        if lo < hi:
            kept.append((text[lo - at : hi - at], style))
        at += len(text)
    return kept


def _style_at(runs: Runs, index: int) -> str:
    at = 0
    for text, style in runs:
        if at <= index < at + len(text):
            return style
        at += len(text)
    return ""


def wrap(plain: str, runs: Runs, width: int, justify: str) -> list[tuple[str, Runs]]:
    """One line of a cell as Rich wraps it in a column ``width`` wide (``Text.wrap``
    with the column's ``ellipsis`` overflow), unpadded."""
    bounds = [0, *breaks(plain, width), len(plain)]
    lines: list[tuple[str, Runs]] = []
    for start, end in zip(bounds, bounds[1:], strict=False):  # noqa: RUF007 - no itertools here
        text, part = plain[start:end], cut(runs, start, end)
        space = len(text) - len(text.rstrip())  # the trailing whitespace (``\\s+$``)
        if len(text) > width and space:
            text = text[: len(text) - min(space, len(text) - width)]
            part = cut(part, 0, len(text))
        if justify == "right":
            text = text.rstrip()
            part = cut(part, 0, len(text))
        if len(text) > width:
            ellipsis = ("…", _style_at(part, width - 1))
            text, part = text[: width - 1] + "…", [*cut(part, 0, width - 1), ellipsis]
        lines.append((text, part))
    return lines
