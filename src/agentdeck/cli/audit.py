"""``agentdeck audit``: list and verify the hash-chained log of permission decisions.

Both read the database directly (WAL: safe beside a running daemon), so a
verification never depends on the process whose writes it checks.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated

import typer
from rich.table import Table

from agentdeck.cli.context import console, opened_store, run_async
from agentdeck.core.audit import AuditEntry, VerifyResult
from agentdeck.errors import NotFound
from agentdeck.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

audit_app = typer.Typer(
    help="The hash-chained audit log of permission decisions. "
    "`audit verify [--json]` checks the chain (exit 1 at the first edited, missing or "
    "forged entry); `audit ls [--agent ID] [--limit N] [--json]` lists the newest entries.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(audit_app, name="audit")


@audit_app.command("verify")
def verify(as_json: JsonOpt = False) -> None:
    """Check the whole chain; exit 1 naming the first edited, missing or forged entry."""

    async def go(settings: Settings) -> VerifyResult:
        async with opened_store(settings) as store:
            return await store.verify_audit()

    result = run_async(go)
    if as_json:
        console.print_json(json.dumps(result.to_dict()))
    elif result.ok:
        console.print(f"audit log intact: {result.count} entries", highlight=False)
    else:
        console.print(
            f"[bold red]audit log broken at entry {result.entry_id}:[/] {result.message}",
            highlight=False,
        )
    raise typer.Exit(0 if result.ok else 1)


@audit_app.command("ls")
def ls(
    agent: Annotated[
        str | None, typer.Option(help="Only this agent (id, unique id prefix, or name).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most entries to list (the newest).")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List the newest audit entries, oldest of them first."""

    async def go(settings: Settings) -> list[AuditEntry]:
        async with opened_store(settings) as store:
            agent_id = None
            if agent is not None:
                try:
                    agent_id = (await store.find_agent(agent)).id
                except NotFound:  # decisions for sessions the board never saw
                    agent_id = agent
            return await store.read_audit_tail(limit=limit, agent_id=agent_id)

    entries = run_async(go)
    if as_json:
        console.print_json(json.dumps([e.to_dict() for e in entries]))
    elif entries:
        console.print(_table(entries))
    else:
        console.print("no audit entries yet")


def _table(entries: list[AuditEntry]) -> Table:
    table = Table(box=None, pad_edge=False)
    for name in ("id", "time (UTC)", "agent", "tool", "decision", "by", "rule", "reason"):
        table.add_column(name, no_wrap=name != "reason")
    for e in entries:
        when = dt.datetime.fromtimestamp(e.ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        style = "red" if e.decision in ("deny", "denied", "expired") else ""
        table.add_row(
            str(e.id),
            when,
            e.agent_id,
            e.tool,
            f"[{style}]{e.decision}[/]" if style else str(e.decision),
            e.answered_by or "",
            e.rule or "",
            e.reason,
        )
    return table
