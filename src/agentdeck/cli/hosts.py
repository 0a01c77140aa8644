"""``agentdeck hosts``: the runner hosts registered in the deck's database, each
with its version, capacity, live leases, labels and the age of its last
heartbeat (by the database's clock). Reads the store directly, beside a daemon.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentdeck.cli.context import opened_store, run_async
from agentdeck.cli.out import print_json, say
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.core.hosts import Host


def register(app: typer.Typer) -> None:
    app.command("hosts")(hosts)


def hosts(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The runner hosts: name, version, capacity, live leases, labels, last heartbeat."""

    async def go(settings: Settings) -> tuple[list[Host], dict[str, int], float]:
        from agentdeck.store.hosts import HostStore

        async with opened_store(settings) as store:
            hs = HostStore(
                store,
                heartbeat_seconds=settings.runner_heartbeat_seconds,
                lease_seconds=settings.runner_lease_seconds,
            )
            found, now = await hs.list_hosts()
            live: dict[str, int] = {}
            for lease in await hs.leases():
                live[lease.host] = live.get(lease.host, 0) + 1
            return found, live, now

    found, live, now = run_async(go)
    rows = [_row(h, live.get(h.name, 0), now) for h in found]
    if as_json:
        print_json(rows)
    elif not rows:
        say("no runner hosts have registered (`agentdeck runner` starts one)")
    else:
        say(_table(rows))


def _row(host: Host, leases: int, now: float) -> dict[str, Any]:
    return {
        **host.to_dict(),
        "live_leases": 0 if host.stopped_at is not None else leases,
        "heartbeat_age_seconds": round(max(0.0, now - host.heartbeat_at), 1),
    }


def _table(rows: list[dict[str, Any]]) -> str:
    head = ("NAME", "VERSION", "CAPACITY", "LIVE", "LABELS", "HEARTBEAT")
    lines = [head]
    for r in rows:
        seen = "stopped" if r["stopped_at"] is not None else f"{r['heartbeat_age_seconds']}s ago"
        lines.append(
            (
                r["name"],
                r["version"] or "-",
                str(r["capacity"]),
                str(r["live_leases"]),
                ",".join(r["labels"]) or "-",
                seen,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
