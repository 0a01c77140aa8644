"""``agentdeck hosts``: the runner hosts registered in the deck's database, each
with its version, capacity, live leases, labels and the age of its last
heartbeat (by the database's clock). Reads the store directly, beside a daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentdeck.cli.context import opened_store, run_async
from agentdeck.cli.out import print_json, say
from agentdeck.settings import Settings

if TYPE_CHECKING:
    from agentdeck.core.hosts import Host


def register(app: typer.Typer) -> None:
    app.command("hosts")(hosts)
    app.command("runner")(runner)


def runner(
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="The shared deck's PostgreSQL URL (default: AGENTDECK_DATABASE_URL); "
            "'-' reads it from stdin, so that its password is on no command line.",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="This host's name (default: AGENTDECK_RUNNER_NAME, else the machine's name).",
        ),
    ] = None,
    capacity: Annotated[
        int | None,
        typer.Option(
            "--capacity",
            min=0,
            help="Agents it runs at once (default: "
            "AGENTDECK_RUNNER_CAPACITY, else AGENTDECK_MAX_LIVE_AGENTS).",
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="A label of this host (repeat); an agent asking for "
            "labels runs only on a host carrying all of them.",
        ),
    ] = None,
    project_root: Annotated[
        list[str] | None,
        typer.Option(
            "--project-root",
            help="A directory this host reaches (repeat): it "
            "claims agents working under one. None: only agents in a workspace of "
            "their own.",
        ),
    ] = None,
) -> None:
    """Run agents of a shared deck (PostgreSQL) and nothing else, until Ctrl-C / SIGTERM.

    It claims the queued agents that fit it (labels, project roots, capacity), each
    under a lease it renews; on a stop it hands the agents it suspended to other
    hosts. `agentdeck hosts` lists the hosts."""
    import asyncio
    import sys

    from agentdeck.cli.context import load_settings
    from agentdeck.daemon.runner_serve import serve_runner
    from agentdeck.runner.hosting import RunnerHost

    settings = load_settings()
    if database == "-":
        database = sys.stdin.readline().strip()
    if database:
        from agentdeck.settings_database import normalise

        settings = settings.model_copy(update={"database_url": normalise(database)})
    roots = [str(Path(r).expanduser().resolve()) for r in project_root or []]

    async def ready(host: RunnerHost) -> None:
        h = host.host
        said = f"runner host {h.name} serving (capacity {h.capacity}"
        said += f"; labels {', '.join(h.labels)}" if h.labels else ""
        said += f"; project roots {', '.join(h.project_roots)}" if h.project_roots else ""
        say(said + ")")

    asyncio.run(
        serve_runner(
            settings,
            name=name,
            capacity=capacity,
            labels=label or None,
            project_roots=roots or None,
            on_ready=ready,
        )
    )
    say("runner host stopped")


def hosts(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The runner hosts: name, version, capacity, live leases, labels, last heartbeat."""

    async def go(settings: Settings) -> tuple[list[Host], dict[str, int], float]:
        from agentdeck.store.hosts import HostStore

        async with opened_store(settings) as store:
            hs = HostStore.of(store, settings)
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
