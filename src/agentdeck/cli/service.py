"""``agentdeck service install|uninstall|status``: the daemon as a systemd service.

The unit is ``Type=notify``: the daemon says ``READY=1`` once it listens and feeds
the watchdog (``WatchdogSec=``) from its event loop while the loop is healthy
(``daemon.watchdog``), so a hung daemon is killed and, with ``Restart=on-failure``,
started again. ``KillMode=mixed``: a stop is the daemon's SIGTERM first (it brings
its agents to a safe stop), the rest of its processes only after.

With ``--user`` the unit is the user's (``~/.config/systemd/user``), else the
system's (``/etc/systemd/system``, root). Where systemd does not run (a container),
the file is written and the command to run is said.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from agentdeck.cli import out
from agentdeck.cli.context import load_settings
from agentdeck.errors import UsageError

UNIT = "agentdeck.service"
WATCHDOG_SECONDS = 30
SYSTEMCTL_TIMEOUT_SECONDS = 60

service_app = typer.Typer(
    help="Run the daemon as a systemd service (restarted when it fails or hangs).",
    no_args_is_help=True,
)

UserOpt = Annotated[
    bool, typer.Option("--user", help="The user's systemd (no root), not the system's.")
]
DirOpt = Annotated[
    Path | None,
    typer.Option(
        "--unit-dir",
        help="Write the unit here instead of systemd's directory (to review or ship it).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(app: typer.Typer) -> None:
    app.add_typer(service_app, name="service")


def unit_dir(user: bool) -> Path:
    if user:
        return Path.home() / ".config" / "systemd" / "user"
    return Path("/etc/systemd/system")


def _quoted(value: str) -> str:
    """A value as one word of a unit file (``%`` is a specifier there)."""
    if any(c in value for c in "\n\r\0"):
        raise UsageError(f"{value!r} cannot be written into a unit file (a line break)")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def unit_text(home: Path, *, user: bool, python: str | None = None) -> str:
    """The unit: this Python (its environment's agentdeck) serving ``home``."""
    exe = python or sys.executable
    target = "default.target" if user else "multi-user.target"
    return (
        "[Unit]\n"
        "Description=agentdeck daemon (a control plane for Claude Code agents)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=notify\n"
        "NotifyAccess=main\n"
        f"ExecStart={_quoted(exe)} -m agentdeck up\n"
        f"Environment={_quoted(f'AGENTDECK_HOME={home}')}\n"
        "Restart=on-failure\n"
        "RestartSec=2\n"
        f"WatchdogSec={WATCHDOG_SECONDS}\n"
        "TimeoutStartSec=120\n"
        "TimeoutStopSec=90\n"
        "KillMode=mixed\n"
        "\n"
        "[Install]\n"
        f"WantedBy={target}\n"
    )


def systemd_runs() -> bool:
    """sd_booted(3): systemd is this machine's init (else systemctl cannot act)."""
    return shutil.which("systemctl") is not None and Path("/run/systemd/system").is_dir()


def _systemctl(user: bool, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["systemctl", *(["--user"] if user else []), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_SECONDS, check=False
    )


def _command(user: bool, *args: str) -> str:
    return " ".join(["systemctl", *(["--user"] if user else []), *args])


@service_app.command("install")
def install(
    user: UserOpt = False,
    where: DirOpt = None,
    enable: Annotated[
        bool, typer.Option("--enable/--no-enable", help="Enable and start it with systemctl.")
    ] = True,
) -> None:
    """Write the daemon's systemd unit (Type=notify, watchdog, Restart=on-failure) for
    this home, then enable and start it when systemd runs here."""
    settings = load_settings()
    directory = where or unit_dir(user)
    if not user and where is None and os.geteuid() != 0:
        raise UsageError(
            f"the system's unit goes in {directory}, which needs root",
            hint="agentdeck service install --user (or run it as root)",
        )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / UNIT
    path.write_text(unit_text(settings.home_dir, user=user))
    path.chmod(0o644)
    out.say(f"wrote {path} (home {settings.home_dir})")
    _verify(path)
    if where is not None or not enable:
        return
    if not systemd_runs():
        out.say(
            "systemd does not run here: once it does, run "
            f"`{_command(user, 'daemon-reload')} && {_command(user, 'enable', '--now', UNIT)}`"
        )
        return
    for args in (("daemon-reload",), ("enable", "--now", UNIT)):
        done = _systemctl(user, *args)
        if done.returncode != 0:
            raise UsageError(
                f"`{_command(user, *args)}` failed: {done.stderr.strip() or done.returncode}",
                hint=f"the unit is written at {path}; run the command yourself to see why",
            )
    out.say(f"enabled and started {UNIT}: `{_command(user, 'status', UNIT)}` shows it")


def _verify(path: Path) -> None:
    """``systemd-analyze verify`` on the unit where systemd's tools are installed: what
    it objects to is said (the unit is written all the same)."""
    if shutil.which("systemd-analyze") is None:
        return
    try:
        done = subprocess.run(
            ["systemd-analyze", "verify", str(path)],
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        out.say("warning: systemd-analyze verify did not finish; the unit is not verified")
        return
    said = [line for line in done.stderr.splitlines() if path.name in line]
    if done.returncode != 0 or said:
        out.say("warning: systemd-analyze verify objects:")
        for line in said or done.stderr.splitlines()[:5]:
            out.say(f"  {line}")


@service_app.command("uninstall")
def uninstall(user: UserOpt = False, where: DirOpt = None) -> None:
    """Stop and disable the daemon's unit (when systemd runs here) and remove it."""
    path = (where or unit_dir(user)) / UNIT
    if where is None and systemd_runs() and path.exists():
        done = _systemctl(user, "disable", "--now", UNIT)
        if done.returncode != 0:
            raise UsageError(
                f"`{_command(user, 'disable', '--now', UNIT)}` failed: {done.stderr.strip()}"
            )
    if not path.exists():
        out.say(f"no unit at {path}: nothing to remove")
        return
    path.unlink()
    if where is None and systemd_runs():
        _systemctl(user, "daemon-reload")
    out.say(f"removed {path}")


@service_app.command("status")
def status(user: UserOpt = False, where: DirOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the unit is installed, current (as install would write it now), and
    what systemd says of it. Exit 1 when it is not installed."""
    settings = load_settings()
    path = (where or unit_dir(user)) / UNIT
    installed = path.is_file()
    current = installed and path.read_text() == unit_text(settings.home_dir, user=user)
    active = enabled = None
    if where is None and systemd_runs():
        active = _systemctl(user, "is-active", UNIT).stdout.strip() or None
        enabled = _systemctl(user, "is-enabled", UNIT).stdout.strip() or None
    if as_json:
        out.print_json(
            {
                "unit": str(path),
                "installed": installed,
                "current": current,
                "systemd": systemd_runs(),
                "active": active,
                "enabled": enabled,
            }
        )
    elif not installed:
        out.say(f"not installed ({path}): agentdeck service install{' --user' if user else ''}")
    else:
        said = "current" if current else "written by another version or for another home"
        out.say(f"{path}: {said}")
        if active is None:
            out.say("systemd does not run here: its state is unknown")
        else:
            out.say(f"systemd: {active}, {enabled}")
    raise typer.Exit(0 if installed else 1)
