"""``agentdeck hooks``: let Claude Code sessions started by hand report to agentdeck.

None of these commands needs the daemon; they edit (or read) Claude Code's
settings files and agentdeck's ``hooks.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from agentdeck.cli.context import console, console_err, load_settings
from agentdeck.hooks.install import (
    CLAUDE_TIMEOUT_SECONDS,
    Change,
    Outcome,
    Scope,
    client_path,
    daemon_listening,
    hook_command,
    hooks_settings,
    install,
    scope_status,
    timeout_problem,
    uninstall,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ScopeOpt = Annotated[
    Scope,
    typer.Option(
        help="user (default): ~/.claude/settings.json, or settings.json in "
        "AGENTDECK_CLAUDE_CONFIG_DIR or CLAUDE_CONFIG_DIR if set; every session you start. "
        "local: DIR/.claude/settings.local.json (not committed). project: "
        "DIR/.claude/settings.json; it gets this machine's absolute paths (interpreter, "
        "client, home) and is usually committed, so prefer local for one project."
    ),
]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project", file_okay=False, help="The project directory (default: the current one)."
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print a diff of what would change; write nothing.")
]

hooks_app = typer.Typer(
    help="Claude Code hooks, so sessions started by hand report to agentdeck. "
    "`hooks install [--scope user|local|project] [--project DIR] [--dry-run] [--json]` merges "
    "agentdeck's hooks into that settings file (backup first; idempotent): by default the "
    "user's, for every session you start; project's gets this machine's absolute paths in a "
    "file that is usually committed; "
    "`hooks uninstall` takes them out again (the file byte for byte as before, unless you "
    "edited it since); `hooks status [--json]` shows where they are installed and whether the "
    "daemon answers; `hooks print` prints the settings JSON, e.g. for "
    '`claude --settings "$(agentdeck hooks print)"`.',
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")


@hooks_app.command("install")
def install_cmd(
    scope: ScopeOpt = Scope.USER,
    project: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Merge agentdeck's hooks into a Claude Code settings file."""
    settings = load_settings()
    change = install(settings, scope, project, dry_run=dry_run)
    if as_json:
        console.print_json(json.dumps(change.to_dict()))
    elif dry_run:
        _print_dry_run(change)
    elif change.outcome is Outcome.UNCHANGED:
        _say(f"agentdeck hooks are already installed in {change.path}; nothing changed")
    else:
        _say(f"installed agentdeck hooks in {change.path}")
        if change.backup:
            _say(f"backup of the previous file: {change.backup}")
        _say(_governance(settings.hook_governance))
    if not dry_run and not client_path().exists():
        console_err.print(f"warning: the hook client {client_path()} is missing", markup=False)


@hooks_app.command("uninstall")
def uninstall_cmd(
    scope: ScopeOpt = Scope.USER,
    project: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Take agentdeck's hooks out of a Claude Code settings file."""
    change = uninstall(load_settings(), scope, project, dry_run=dry_run)
    if as_json:
        console.print_json(json.dumps(change.to_dict()))
    elif dry_run:
        _print_dry_run(change)
    elif change.outcome is Outcome.NOT_INSTALLED:
        _say(f"agentdeck hooks are not installed in {change.path}; nothing to do")
    elif change.outcome is Outcome.RESTORED:
        _say(f"restored {change.path} to what it was before install")
    elif change.outcome is Outcome.DELETED:
        _say(f"removed {change.path} (it did not exist before install)")
    else:
        edits = "; your edits since install are kept" if change.kept_edits else ""
        _say(f"removed agentdeck hooks from {change.path}{edits}")
        _say(f"backup of the previous file: {change.backup}")


@hooks_app.command("status")
def status_cmd(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Where agentdeck's hooks are installed, and whether what they need is there."""
    settings = load_settings()
    scopes = [scope_status(settings, s, project) for s in Scope]
    report: dict[str, Any] = {
        "scopes": [s.to_dict() for s in scopes],
        "command": hook_command(settings),
        "timeout": CLAUDE_TIMEOUT_SECONDS,
        "deadline": settings.hook_deadline_seconds,
        "governance": settings.hook_governance,
        "approval_seconds": settings.hook_approval_seconds,
        "client": str(client_path()),
        "client_exists": client_path().exists(),
        "hooks_config": str(settings.hooks_config_path),
        "hooks_config_exists": settings.hooks_config_path.exists(),
        "socket": str(settings.socket_path),
        "daemon_listening": daemon_listening(settings.socket_path),
    }
    if as_json:
        console.print_json(json.dumps(report))
        return
    for s in scopes:
        if s.error:
            state = f"unreadable: {s.error}"
        elif not s.installed:
            state = "not installed" if s.exists else "not installed (no file)"
        else:
            state = f"installed for {len(s.events)} events: {', '.join(s.events)}"
            if not s.current:
                state += "; the command differs from this install's (run install again)"
            problem = timeout_problem(s, settings.hook_deadline_seconds)
            if problem:
                state += f"; {problem}"
            if s.interpreter_exists is False:
                state += "; its interpreter is missing"
            if s.client_exists is False:
                state += "; its hook client is missing"
        _say(f"{s.scope.value:<8}{s.path}: {state}")
    _say(f"command: {report['command']}")
    if not report["client_exists"]:
        _say(f"hook client: {report['client']} is missing")
    present = "present" if report["hooks_config_exists"] else "missing (install writes it)"
    _say(f"hooks.json: {report['hooks_config']} {present}")
    up = "accepts connections" if report["daemon_listening"] else "no daemon listening"
    _say(f"daemon socket: {report['socket']}: {up}")
    _say(_governance(settings.hook_governance))


@hooks_app.command("print")
def print_cmd() -> None:
    """Print the hooks settings JSON (for `claude --settings` or a file)."""
    typer.echo(json.dumps(hooks_settings(load_settings()), indent=2))


def _print_dry_run(change: Change) -> None:
    if change.diff:
        typer.echo(change.diff, nl=False)
    else:
        console_err.print(f"nothing would change in {change.path}", markup=False)
    console_err.print("dry run: nothing written", markup=False)


def _governance(mode: str) -> str:
    """What the hooks decide in a session started by hand, in one line."""
    if mode == "full":
        return (
            "governance: full (AGENTDECK_HOOK_GOVERNANCE): the profile decides every tool "
            "call, its allow rules and default included"
        )
    return (
        "governance: deny-and-ask (AGENTDECK_HOOK_GOVERNANCE): the profile's deny and ask "
        "rules apply; Claude Code's own rules decide every other call"
    )


def _say(text: str) -> None:
    console.print(text, markup=False)
