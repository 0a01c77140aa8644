"""The server-side SVG charts: pure functions of the figures."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from agentdeck.web import charts

DAY = 86_400.0
T0 = 20_000 * DAY


def test_series_lays_points_on_every_bucket_and_folds_extra_groups_into_other() -> None:
    starts = [T0, T0 + DAY, T0 + 2 * DAY]
    order = [f"g{i}" for i in range(charts.MAX_GROUPS + 2)]
    points = [(T0 + DAY, g, 1.0) for g in order] + [(T0 - DAY, "g0", 5.0)]  # before: dropped
    s = charts.series(starts, points, order)
    assert list(s.values) == [*order[: charts.MAX_GROUPS], charts.OTHER]
    assert s.values["g0"] == [0.0, 1.0, 0.0]
    assert s.values[charts.OTHER] == [0.0, 2.0, 0.0]


def test_a_bar_chart_is_valid_svg_with_one_segment_per_group_and_the_cap_line() -> None:
    s = charts.series(
        [T0, T0 + DAY], [(T0, "a", 0.3), (T0, "b", 0.2), (T0 + DAY, "a", 0.1)], ["a", "b"]
    )
    svg = charts.bar_chart(
        s, title="Cost <per day>", hourly=False, fmt=charts.usd, limit=2.0, limit_label="cap"
    )
    root = ET.fromstring(svg)  # well-formed, the title escaped
    ns = "{http://www.w3.org/2000/svg}"
    bars = root.findall(f"{ns}rect")
    assert [b.get("data-group") for b in bars] == ["a", "b", "a"]
    (limit,) = [line for line in root.findall(f"{ns}line") if line.get("class") == "limit"]
    # The axis tops at the cap (2.0 is a round number), so the cap is the top grid line.
    assert float(limit.get("y1", "0")) == charts.TOP
    assert "cap $2.00" in svg and "Cost &lt;per day&gt;" in svg
    # Stacked: b sits on a, the two as tall as their sum.
    a, b = bars[0], bars[1]
    assert float(b.get("y", 0)) + float(b.get("height", 0)) == float(a.get("y", 0))


def test_no_limit_no_line_and_an_empty_chart_still_draws_its_axis() -> None:
    s = charts.series([T0], [], [])
    svg = charts.bar_chart(s, title="Tokens", hourly=True, fmt=charts.count)
    assert 'class="limit"' not in svg and "<rect" not in svg
    assert ET.fromstring(svg) is not None


def test_hour_labels_fall_on_round_hours_and_midnight_shows_the_date() -> None:
    starts = charts.bucket_starts(T0 - 5 * 3600, T0 + 7 * DAY, 3600)
    svg = charts.bar_chart(charts.series(starts, [], []), title="t", hourly=True, fmt=charts.count)
    labels = re.findall(r'font-size="11" fill="#5f6b7a">([^<]+)</text>', svg)
    dates = [x for x in labels if not x.endswith(":00") and not x[0].isdigit()]
    assert 7 <= len(dates) <= 12 and all(" " in d for d in dates)


def test_axis_tops_and_figures_read_well() -> None:
    assert [charts.nice_max(v) for v in (0, 0.3, 0.49, 1.2, 3, 7, 120)] == [
        1,
        0.5,
        0.5,
        2,
        5,
        10,
        200,
    ]
    assert charts.usd(0.125) == "$0.125" and charts.usd(1.5) == "$1.50" and charts.usd(0) == "$0"
    assert charts.count(122_088) == "122k" and charts.count(231) == "231"
