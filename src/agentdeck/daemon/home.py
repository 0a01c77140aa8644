"""Files in AGENTDECK_HOME that belong to the daemon: token, lock, address.

Imports nothing heavy: the CLI's quick path reads these on every command.
"""

from __future__ import annotations

import fcntl
import os

from agentdeck import jsontext
from agentdeck.errors import AgentdeckError, ConfigError

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from pathlib import Path
    from typing import IO, Any, Protocol

    class Home(Protocol):
        """What these files need of the settings: where the home is. (The CLI's
        quick path gives just that, without loading the settings.)"""

        @property
        def home_dir(self) -> Path | str: ...


def _at(settings: Home, name: str) -> str:
    """A file of the home, as text (``pathlib`` would cost the quick path ~5 ms)."""
    return os.path.join(os.fspath(settings.home_dir), name)


class DaemonRunning(AgentdeckError):
    """Another daemon already owns this home."""


def token_path(settings: Home) -> Path:
    from pathlib import Path

    return Path(_at(settings, "token"))


def ensure_token(settings: Home) -> str:
    """The API token; created (mode 0600) on first use. A file that holds none
    (empty, or only whitespace) is refused: a daemon with it nobody could log into."""
    path = token_path(settings)
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        pass
    else:
        if not token:
            raise ConfigError(
                f"the API token file {path} holds no token",
                hint=f"remove it (`rm {path}`) and start again: a new token is made; "
                "or write a token of your own into it",
            )
        from agentdeck.core.token_hash import MIN_CHARS

        if len(token) < MIN_CHARS:
            raise ConfigError(
                f"the API token in {path} is {len(token)} characters long, "
                f"shorter than the {MIN_CHARS} a token needs",
                hint=f"remove it (`rm {path}`) and start again: a new token is made; "
                f"or write a token of {MIN_CHARS} characters or more into it",
            )
        return token
    import secrets  # not at the top: the CLI's quick path reads this module

    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race
        return path.read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot create the API token file {path}: {exc}") from exc
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def read_token(settings: Home) -> str | None:
    try:
        with open(_at(settings, "token")) as f:
            return f.read().strip() or None
    except OSError:
        return None


class DaemonInfo:
    """Where the home's daemon listens (``daemon.json``). A plain class: the
    dataclass machinery (``inspect`` and all) costs the quick path ~10 ms, a named
    tuple ``typing`` or ``collections``."""

    __slots__ = ("host", "pid", "port", "started_at")

    def __init__(self, pid: int, host: str, port: int, started_at: float) -> None:
        self.pid, self.host, self.port, self.started_at = pid, host, port, started_at

    def _asdict(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "port": self.port,
                "started_at": self.started_at}  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DaemonInfo) and self._asdict() == other._asdict()

    def __hash__(self) -> int:
        return hash((self.pid, self.host, self.port, self.started_at))

    def __repr__(self) -> str:
        return "DaemonInfo(" + ", ".join(f"{k}={v!r}" for k, v in self._asdict().items()) + ")"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def login_url(info: DaemonInfo, token: str) -> str:
    """The dashboard's address that logs in with ``token``. Here, not beside the
    server: ``up --detach`` prints it without importing the server."""
    return f"{info.url}/login?token={token}"


def info_path(settings: Home) -> Path:
    from pathlib import Path

    return Path(_at(settings, "daemon.json"))


def write_info(settings: Home, info: DaemonInfo) -> None:
    from agentdeck.files import atomic_write  # the daemon writes; every client reads

    atomic_write(_at(settings, "daemon.json"), jsontext.dumps(info._asdict()))


def read_info(settings: Home) -> DaemonInfo | None:
    try:
        with open(_at(settings, "daemon.json")) as f:
            data = jsontext.loads(f.read())
        return DaemonInfo(
            int(data["pid"]), str(data["host"]), int(data["port"]), float(data["started_at"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clear_info(settings: Home) -> None:
    import contextlib  # not at the top: the CLI's quick path reads this module

    with contextlib.suppress(FileNotFoundError):
        info_path(settings).unlink()


class DaemonLock:
    """An exclusive lock on the home: one daemon per home. Released when the
    process ends, however it ends (the kernel drops ``flock`` locks)."""

    def __init__(self, settings: Home) -> None:
        self.path = _at(settings, "daemon.lock")
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        f = open(self.path, "a+")  # noqa: SIM115 - held open until release()
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise DaemonRunning(
                f"a daemon is already running for {os.path.dirname(self.path)}",
                hint="`agentdeck status` shows it; `agentdeck down` stops it",
            ) from None
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def held_elsewhere(self) -> bool:
        """Whether some process holds the lock (without taking it)."""
        try:
            with open(self.path, "a+") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        except BlockingIOError:
            return True
        except OSError:
            return False
        return False


def stop_daemon(settings: Home, timeout: float) -> DaemonInfo | None:
    """SIGTERM the home's daemon and wait until it has let go of the home (its
    agents brought to a safe stop); None when none runs."""
    import signal
    import time

    info = read_info(settings)
    lock = DaemonLock(settings)
    if info is None or not lock.held_elsewhere():
        return None
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while lock.held_elsewhere():
        if time.monotonic() > deadline:
            raise AgentdeckError(
                f"the daemon (pid {info.pid}) did not stop within {timeout:.0f}s",
                hint=f"kill -9 {info.pid}; the next `up` reconciles its agents",
            )
        time.sleep(0.05)
    return info
