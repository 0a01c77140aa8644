"""``agentdeck up / down / status``: the daemon's lifecycle (``demo`` is in
``demo_command.py``: the demo imports this module's banner)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Annotated

import typer

from agentdeck.cli import out, remote
from agentdeck.cli.context import console, load_settings
from agentdeck.daemon.home import (
    DaemonInfo,
    DaemonLock,
    ensure_token,
    login_url,
    read_info,
    read_token,
)
from agentdeck.errors import AgentdeckError
from agentdeck.settings import Settings

HostOpt = Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")]
PortOpt = Annotated[int | None, typer.Option(help="Port (default 8765; 0 = any free port).")]


def register(app: typer.Typer) -> None:
    for name, fn in (("up", up), ("down", down), ("status", status)):
        app.command(name)(fn)


def _settings(host: str | None, port: int | None) -> Settings:
    settings = load_settings()
    changes = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    return settings.model_copy(update=changes) if changes else settings


def banner(info: DaemonInfo, token: str | None) -> None:
    """Where the daemon is; the login link (with its token) only when ``token`` is
    given: a detached daemon's output goes to its log, which never holds the token."""
    console.print(f"agentdeck daemon on [bold]{info.url}[/] (pid {info.pid})")
    if token is None:
        console.print(f"dashboard: [bold]{info.url}/[/] (log in with the token file's token)")
    else:
        console.print(f"dashboard: [bold]{login_url(info, token)}[/]")


def up(
    host: HostOpt = None,
    port: PortOpt = None,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            "-d",
            help="Run in the background; logs go to AGENTDECK_HOME/logs/daemon.log.",
        ),
    ] = False,
    # What --detach starts: its output goes to the log, so it prints no token.
    detached: Annotated[bool, typer.Option("--detached", hidden=True)] = False,
    no_runner: Annotated[
        bool,
        typer.Option(
            "--no-runner",
            help="On a shared deck (PostgreSQL): serve the API and the dashboard only; "
            "runner hosts (`agentdeck runner`) run the agents.",
        ),
    ] = False,
) -> None:
    """Start the daemon: runner, store, API and dashboard, until Ctrl-C / SIGTERM / SIGHUP.

    Each stops its agents first (`agentdeck down` sends SIGTERM); under nohup a
    hang-up is ignored."""
    settings = _settings(host, port)
    settings.ensure_home()
    if DaemonLock(settings).held_elsewhere():
        info = read_info(settings)
        raise AgentdeckError(
            f"a daemon is already running for {settings.home_dir}"
            + (f" at {info.url} (pid {info.pid})" if info else ""),
            hint="`agentdeck down` stops it",
        )
    if "discord" in settings.bridges:
        from agentdeck.bridges.discord.setup import check

        check(settings)  # a bridge that cannot run stops the start, before anything runs
    if "slack" in settings.bridges:
        from agentdeck.bridges.slack.setup import check as check_slack

        check_slack(settings)
    if detach:
        _detach(settings, no_runner=no_runner)
        return
    from agentdeck.serve import serve

    async def ready(_: object, info: DaemonInfo, token: str) -> None:
        banner(info, None if detached else token)
        running = []
        if "discord" in settings.bridges:
            from agentdeck.bridges.discord.setup import serve_beside_daemon

            console.print("Discord bridge: starting")
            running.append(serve_beside_daemon(settings))
        if "slack" in settings.bridges:
            from agentdeck.bridges.slack.setup import serve_beside_daemon as serve_slack

            console.print("Slack bridge: starting")
            running.append(serve_slack(settings))
        await asyncio.gather(*running)  # each logs its own failure; the daemon serves on

    asyncio.run(serve(settings, on_ready=ready, runner=not no_runner))
    console.print("agentdeck daemon stopped")


def _detach(settings: Settings, *, no_runner: bool = False) -> None:
    ensure_token(settings)  # a token file that holds none is refused here, in one line
    # The log is the owner's alone (0600, in a 0700 directory), made so if an
    # earlier version left it readable.
    settings.logs_dir.chmod(0o700)
    log = settings.logs_dir / "daemon.log"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    argv = [
        sys.executable,
        "-m",
        "agentdeck",
        "up",
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--detached",
        *(["--no-runner"] if no_runner else []),
    ]
    with os.fdopen(fd, "ab") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = read_info(settings)
        token = read_token(settings)
        if info is not None and info.pid == proc.pid and token:
            banner(info, token)
            return
        if proc.poll() is not None:
            raise AgentdeckError(
                f"the daemon exited at start-up (code {proc.returncode})", hint=f"see {log}"
            )
        time.sleep(0.1)
    proc.terminate()
    raise AgentdeckError("the daemon did not come up within 60 s", hint=f"see {log}")


def down(
    timeout: Annotated[float, typer.Option(help="Seconds to wait for a clean stop.")] = 30.0,
) -> None:
    """Stop the daemon of this home: agents are brought to a safe stop first."""
    raise typer.Exit(remote.down(load_settings().home_dir, timeout))


def status(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Is a daemon running for this home, where, and what it runs."""
    if (d := remote.daemon()) is not None:
        raise typer.Exit(remote.status(d, as_json))
    home = load_settings().home_dir
    if as_json:
        out.print_json({"running": False, "home": str(home)})
    else:
        out.say(f"no daemon running for {home}")
    raise typer.Exit(1)
