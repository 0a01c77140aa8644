"""A private PostgreSQL cluster for tests: initdb + pg_ctl in a temporary directory.

No Docker and no system service: the server binaries of Debian's ``postgresql``
package (``make test`` installs it where it is missing) run as this user, or as
the ``postgres`` user when the suite runs as root (PostgreSQL refuses to run as
root). The cluster listens on a Unix socket in its own directory and on a free
loopback port; each test gets a fresh database (``PgCluster.database``), so
tests never see each other's rows and a cluster is started once per process
(one per xdist worker, ~1 s).

``pg_cluster`` (session) is the cluster; ``pg_url`` (function) is the URL of a
fresh empty database on it. Both skip the test when no server binaries exist
and ``AGENTDECK_REQUIRE_POSTGRES`` is unset (CI sets it: there a missing server
fails instead of skipping).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Debian's layout: /usr/lib/postgresql/<major>/bin (not on PATH by default).
_DEBIAN = Path("/usr/lib/postgresql")


def server_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    majors = sorted(_DEBIAN.glob("*/bin"), reverse=True) if _DEBIAN.is_dir() else []
    return next((d for d in majors if (d / "pg_ctl").exists()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One running PostgreSQL server with a superuser ``agentdeck`` (trust auth,
    loopback and its own socket only)."""

    USER = "agentdeck"

    def __init__(self, base: Path, bindir: Path) -> None:
        self.base = base
        self.bindir = bindir
        self.data = base / "data"
        self.sockets = base / "run"
        self.port = _free_port()
        self._names = itertools.count(1)
        self._as: list[str] = []
        if os.geteuid() == 0:
            # PostgreSQL will not run as root: run its programs as `postgres`.
            pwd.getpwnam("postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        proc = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}")

    def start(self) -> None:
        self.sockets.mkdir(parents=True)
        if self._as:
            shutil.chown(self.base, "postgres")
            shutil.chown(self.sockets, "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=300 -c shared_buffers=64MB"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.base / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        """Stop and start the server on the same port (clients must reconnect).
        With its log file, as ``start``: a server left writing to our pipes would
        keep ``_run`` waiting for their end until its timeout."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.base / "server.log"),
            "-m",
            "fast",
            "-w",
            "-t",
            "60",
            "restart",
        )

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL for ``database`` over loopback TCP (psycopg 3)."""
        return f"postgresql+psycopg://{self.USER}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """Create a fresh empty database; return its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user={self.USER} dbname=postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _required() -> bool:
    return os.environ.get("AGENTDECK_REQUIRE_POSTGRES", "") not in ("", "0")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    bindir = server_bin()
    if bindir is None:
        if _required():
            pytest.fail("AGENTDECK_REQUIRE_POSTGRES is set but no PostgreSQL server is installed")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    base = Path(tempfile.mkdtemp(prefix="agentdeck-pg-"))
    cluster = PgCluster(base, bindir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """The URL of a fresh, empty database on the session's cluster."""
    return pg_cluster.database()
