"""Where the daemon of a home is: its ``daemon.json`` (address) and ``token``.

The daemon writes both into its home (``daemon.home``); a client reads them. A
``daemon.json`` whose lock no process holds is left from a daemon that died: no
daemon runs there. Imports nothing heavy: the CLI's quick path reads these on
every command.
"""

from __future__ import annotations

from agentdeck.daemon.home import DaemonInfo, DaemonLock, read_info, read_token

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DaemonInfo", "HomeDir", "find", "recorded"]


class HomeDir:
    """What ``daemon.home`` needs of the settings: the home directory."""

    def __init__(self, home_dir: str | Path) -> None:
        self.home_dir = home_dir


def find(home_dir: str | Path) -> tuple[DaemonInfo, str | None] | None:
    """The daemon running for a home and its token (None when the token file is
    missing); None when no daemon runs there."""
    home = HomeDir(home_dir)
    info = read_info(home)
    if info is None or not DaemonLock(home).held_elsewhere():
        return None
    return info, read_token(home)


def recorded(home_dir: str | Path) -> tuple[DaemonInfo, str] | None:
    """The daemon a home's files name, lock or not (a bridge started beside it), or
    None when either file is missing."""
    home = HomeDir(home_dir)
    info, token = read_info(home), read_token(home)
    return None if info is None or token is None else (info, token)
