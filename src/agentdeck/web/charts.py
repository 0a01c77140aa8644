"""Charts as SVG markup, built on the server from the figures: no script, no
build step. Pure functions (text in, text out), so tests read the markup.

``bar_chart`` draws one stacked bar per time bucket (a segment per group, in
the order given) and, optionally, a dashed horizontal line for a limit (the
fleet's daily cap on a chart of days).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

# Distinguishable on white and for the common colour blindnesses (Okabe-Ito, darkened).
PALETTE = ("#2455c3", "#d55e00", "#009e73", "#cc79a7", "#b58900", "#56b4e9", "#6b4c9a", "#7a7a7a")
OTHER = "other"
MAX_GROUPS = len(PALETTE) - 1  # the rest are summed as "other"

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 30


@dataclass(frozen=True)
class Series:
    """Values per bucket for each group, the groups in drawing (and legend) order."""

    starts: list[float]
    values: dict[str, list[float]]


def series(
    starts: Sequence[float],
    points: Sequence[tuple[float, str, float]],
    order: Sequence[str],
) -> Series:
    """``(bucket start, group, value)`` laid out on ``starts`` (zeros where a bucket
    has nothing); groups after the first ``MAX_GROUPS`` of ``order`` become ``other``."""
    kept = list(order[:MAX_GROUPS])
    names = kept + ([OTHER] if len(order) > MAX_GROUPS else [])
    index = {s: i for i, s in enumerate(starts)}
    values = {n: [0.0] * len(starts) for n in names}
    for start, key, value in points:
        i = index.get(start)
        if i is None:
            continue
        values[key if key in kept else OTHER][i] += value
    return Series(list(starts), values)


def colors(groups: Sequence[str]) -> dict[str, str]:
    return {
        g: PALETTE[-1] if g == OTHER else PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)
    }


def nice_max(value: float) -> float:
    """A round number at or above ``value`` for the top of the axis: 1, 2, 2.5 or 5
    times a power of 10."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value * (1 - 1e-9):
            return float(step * exp)
    return float(10 * exp)  # pragma: no cover - the loop ends at 10


def usd(value: float) -> str:
    if value == 0:
        return "$0"
    cents = value * 100
    return f"${value:.2f}" if abs(cents - round(cents)) < 1e-6 else f"${value:.3g}"


def count(value: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}"


def bucket_label(start: float, hourly: bool) -> str:
    d = datetime.fromtimestamp(start, UTC)
    return d.strftime("%H:00") if hourly and d.hour else d.strftime("%b %d")


def label_step(n: int, hourly: bool) -> int:
    """Buckets between two labels: a round number of hours or days, at most a dozen labels."""
    steps = (1, 2, 3, 6, 12, 24, 48, 72, 168) if hourly else (1, 2, 7, 14, 28, 56)
    return next((s for s in steps if n / s <= 12), steps[-1] * math.ceil(n / 12 / steps[-1]))


def bar_chart(
    data: Series,
    *,
    title: str,
    hourly: bool,
    fmt: Callable[[float], str],
    limit: float | None = None,
    limit_label: str = "",
) -> str:
    """An SVG stacked bar chart; ``limit``: a dashed line at that value."""
    n = len(data.starts)
    totals = [sum(v[i] for v in data.values.values()) for i in range(n)]
    top = nice_max(max([*totals, limit or 0.0, 0.0]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(n, 1)
    bar = max(1.0, slot * 0.8)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'class="chart" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i in range(5):  # the grid and the y axis's labels
        value = top * i / 4
        gy = y(value)
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}" '
            'stroke="#dde2e8" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{gy + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#5f6b7a">{escape(fmt(value))}</text>'
        )
    palette = colors(list(data.values))
    for i, start in enumerate(data.starts):
        x = LEFT + i * slot + (slot - bar) / 2
        base = 0.0
        for group, values in data.values.items():
            v = values[i]
            if v <= 0:
                continue
            y0, y1 = y(base + v), y(base)
            tip = f"{group}, {bucket_label(start, hourly)}: {fmt(v)}"
            out.append(
                f'<rect class="bar" x="{x:.1f}" y="{y0:.1f}" width="{bar:.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{palette[group]}" '
                f'data-group="{escape(group)}"><title>{escape(tip)}</title></rect>'
            )
            base += v
    every = label_step(n, hourly)
    for i in range(n):
        position = int(data.starts[i] // 3600) if hourly else i
        if position % every:
            continue  # hours labelled on round hours (00:00 shows the date)
        x = LEFT + (i + 0.5) * slot
        out.append(
            f'<text x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle" font-size="11" '
            f'fill="#5f6b7a">{escape(bucket_label(data.starts[i], hourly))}</text>'
        )
    if limit is not None:
        ly = y(limit)
        label = f"{limit_label} {fmt(limit)}".strip()
        out.append(
            f'<line class="limit" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ly:.1f}" y2="{ly:.1f}" '
            'stroke="#b91c1c" stroke-width="2" stroke-dasharray="6 4"/>'
        )
        out.append(
            f'<text class="limit-label" x="{WIDTH - RIGHT - 4}" y="{ly - 5:.1f}" '
            f'text-anchor="end" font-size="12" fill="#b91c1c">{escape(label)}</text>'
        )
    out.append(
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
        'stroke="#5f6b7a" stroke-width="1"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def bucket_starts(since: float, until: float, seconds: int) -> list[float]:
    """Every bucket start from ``since`` (a bucket's start) up to ``until``."""
    first = math.floor(since / seconds) * seconds
    return [float(t) for t in range(int(first), int(until) + 1, seconds)]
