"""``agentdeck usage`` through the daemon, and its output either way.

On the quick path: no store, SDK or web framework here (``core.usage`` is pure).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agentdeck.cli import out

if TYPE_CHECKING:
    from agentdeck.client.quick import Daemon
    from agentdeck.core.usage import UsageReport


def usage(d: Daemon, by: str, since: str, bucket: str, as_json: bool) -> int:
    from agentdeck.core.usage import UsageReport

    data = d.get("/api/usage", {"by": by, "since": since, "bucket": bucket})
    print_usage(UsageReport.from_dict(data), since=since, as_json=as_json)
    return 0


def print_usage(report: UsageReport, *, since: str, as_json: bool) -> None:
    if as_json:
        out.print_json(report.to_dict())
        return
    from rich.table import Table

    total = report.total
    cap = f"${report.daily_cap_usd:.2f}" if report.daily_cap_usd is not None else "none"
    out.say(
        f"last {since}: ${total.cost_usd:.4f}, {total.input_tokens:,} input and "
        f"{total.output_tokens:,} output tokens in {total.results} results "
        f"(daily fleet cap: {cap})"
    )
    console = out.console()
    if report.by != "none":
        groups = Table(title=f"by {report.by}", title_justify="left")
        for name in (str(report.by), "cost", "input", "output", "results"):
            groups.add_column(name, justify="left" if name == str(report.by) else "right")
        for key, f in report.groups():
            groups.add_row(
                key, f"${f.cost_usd:.4f}", f"{f.input_tokens:,}", f"{f.output_tokens:,}",
                str(f.results),
            )  # fmt: skip
        console.print(groups)
    per: dict[float, tuple[float, int]] = {}
    for p in report.points:
        cost, tokens = per.get(p.start, (0.0, 0))
        f = p.figures
        per[p.start] = (cost + f.cost_usd, tokens + f.input_tokens + f.output_tokens)
    if per:
        fmt = "%Y-%m-%d %H:00" if report.bucket == "hour" else "%Y-%m-%d"
        over = Table(title=f"per {report.bucket} (UTC)", title_justify="left")
        for name in (str(report.bucket), "cost", "tokens"):
            over.add_column(name, justify="left" if name == str(report.bucket) else "right")
        for start in sorted(per):
            cost, tokens = per[start]
            over.add_row(
                datetime.fromtimestamp(start, UTC).strftime(fmt), f"${cost:.4f}", f"{tokens:,}"
            )
        console.print(over)
    if report.budgets:
        print_budgets(report)


def print_budgets(report: UsageReport) -> None:
    from rich.table import Table

    table = Table(title="daily budgets", title_justify="left")
    for name in ("scope", "name", "spent today", "budget", "used"):
        table.add_column(
            name, justify="right" if name in ("spent today", "budget", "used") else "left"
        )
    for b in report.budgets:
        used = f"{100 * b.fraction:.0f} %" if b.daily_usd > 0 else "-"
        table.add_row(b.scope, b.name, f"${b.spent_today_usd:.4f}", f"${b.daily_usd:.2f}", used)
    out.console().print(table)
