"""``agentdeck db``: the deck's database. ``db migrate --to URL`` copies this home's
SQLite database into PostgreSQL (``store.copy``), checks it, and says what it did.

The copy reads a database no one writes to: it refuses while a daemon runs for
the home (and reads one snapshot besides). The URL may hold a password: it is
shown with the password hidden, and ``--to -`` reads it from stdin so that it
stays out of the process list.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from agentdeck.cli.context import console, load_settings
from agentdeck.errors import UsageError

if TYPE_CHECKING:  # SQLAlchemy loads with the command that needs it
    from agentdeck.store.copy import CopyReport, TableCopied

db_app = typer.Typer(
    help="The deck's database. `db migrate --to URL [--json]` copies this home's SQLite "
    "database into PostgreSQL (every table, ids kept), checks the counts and the audit "
    "chain there, and says what it did; run again, it copies nothing twice. `db upgrade` "
    "brings the deck's database to this version's schema (as the owner role, when the "
    "deck's own role may change no schema).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")


@db_app.command("migrate")
def migrate(
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            help="The PostgreSQL database: postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DB; "
            "`-` reads it from stdin (keeps a password out of the process list); "
            "default: AGENTDECK_DATABASE_URL.",
        ),
    ] = None,
    batch: Annotated[int, typer.Option(min=1, help="Rows per page read and written.")] = 5000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy this home's SQLite database into PostgreSQL, then check counts and audit chain."""
    from agentdeck.client.locate import find
    from agentdeck.store.copy import copy_database

    if to == "-":
        to = sys.stdin.readline().strip()
        if not to:
            raise UsageError("--to - read no URL from stdin")
    settings = load_settings()
    to = to or settings.database_url
    if not to:
        raise UsageError(
            "say which PostgreSQL database to copy into",
            hint="--to URL (or --to - to read it from stdin), or set AGENTDECK_DATABASE_URL",
        )
    running = find(settings.home_dir)
    if running is not None:
        raise UsageError(
            f"a daemon runs for {settings.home_dir} (pid {running[0].pid}): the copy reads a "
            "database no one writes to",
            hint="stop it first (`agentdeck down`), then run the copy again",
        )
    if not as_json:
        from agentdeck.store.copy_plan import shown, target_url

        console.print(f"copying {settings.db_path} into {shown(target_url(to))}", highlight=False)
    report = copy_database(
        settings.db_path, to, batch=batch, on_table=None if as_json else _print_table
    )
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
    else:
        _print_report(report)


@db_app.command("upgrade")
def upgrade(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Bring the deck's database (AGENTDECK_DATABASE_URL, else this home's file) to this
    version's schema, and say where it stands. Every command that opens the store does
    this itself; this is for a deployment whose deck runs as a role that may change no
    schema (docs/deploy.md): run it once as the owner role after each upgrade."""
    import asyncio

    from agentdeck.settings_database import hide_password
    from agentdeck.store import Store
    from agentdeck.store.head import HEAD

    settings = load_settings()

    async def opened() -> None:
        async with Store.open(settings.database):
            pass

    asyncio.run(opened())
    where = hide_password(settings.database_url) if settings.database_url else settings.db_path
    if as_json:
        console.print_json(json.dumps({"database": str(where), "schema": HEAD}))
    else:
        console.print(f"{where}: schema {HEAD}", highlight=False)


def _print_table(table: TableCopied) -> None:
    console.print(
        f"  {table.table:<14} copied {table.copied:>9,}   already there {table.present:>9,}"
        f"   total {table.total:>9,}"
        + (f"   ({table.cleaned:,} without a NUL character)" if table.cleaned else ""),
        highlight=False,
    )


def _print_report(report: CopyReport) -> None:
    if report.created_schema:
        console.print("created the schema in the target", highlight=False)
    chain = report.audit
    console.print(
        f"audit chain verified in the target: {chain.count} entries, head {chain.head[:12]}",
        highlight=False,
    )
    console.print(
        f"copied {report.copied:,} rows into {report.target} in {report.seconds:.2f} s "
        f"({report.rows_per_second:,.0f} rows/s); every table's count equals the source's",
        highlight=False,
    )
