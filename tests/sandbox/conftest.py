"""A world to escape from: a user home with a planted key, an agentdeck home
(token, database, another agent's workspace), a workspace inside it with a
planted symlink out, a place outside, and local HTTP servers."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentdeck.sandbox import support
from agentdeck.sandbox.support import _probe_bwrap
from agentdeck.settings import Settings

PROBE = Path(__file__).with_name("probe.py")
HAS_BWRAP = _probe_bwrap()[0]
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap cannot run here")


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"SERVED {self.server.server_address[1]}".encode()  # type: ignore[index]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


def serve() -> tuple[http.server.ThreadingHTTPServer, int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def host_ip() -> str:
    """An address of this machine that is not loopback (or loopback if none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


@dataclass
class World:
    tmp: Path
    settings: Settings
    workspace: Path
    outside: Path
    local_port: int
    model_port: int
    config: Path
    host_ip: str

    @property
    def probe(self) -> Path:
        """The probe, copied beside the world: a sandbox hides ``/tmp``, where a
        checkout (CI's) may be."""
        return self.tmp / "probe.py"

    def probe_argv(self) -> list[str]:
        return [sys.executable, str(self.probe), str(self.config)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.contextmanager
def _base(tmp_path: Path) -> Iterator[Path]:
    """Where the world is built: outside ``/tmp`` when possible, since a sandbox
    has a private ``/tmp`` and a place it cannot see proves less than a place
    it sees read-only."""
    for parent in ("/var/tmp", str(Path.home())):
        if os.access(parent, os.W_OK):
            base = Path(tempfile.mkdtemp(prefix="agentdeck-world-", dir=parent))
            try:
                yield base
            finally:
                shutil.rmtree(base, ignore_errors=True)
            return
    yield tmp_path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world per test module (building it and probing it takes seconds);
    tests that change it use places of their own inside it."""
    with _base(tmp_path_factory.mktemp("world")) as base, pytest.MonkeyPatch.context() as mp:
        yield from _world(base, mp)


def _world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_rsa").write_text("FAKE-PRIVATE-KEY\n")
    monkeypatch.setenv("HOME", str(user))
    deck_home = tmp_path / "deck"
    (deck_home / "workspaces" / "other").mkdir(parents=True)
    (deck_home / "workspaces" / "other" / "secret.txt").write_text("OTHER-AGENTS-WORK")
    (deck_home / "token").write_text("DECK-TOKEN")
    (deck_home / "agentdeck.db").write_bytes(b"SQLite format 3\x00")
    workspace = deck_home / "workspaces" / "a1"
    workspace.mkdir()
    (workspace / "README.md").write_text("THE PROJECT")
    (workspace / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("UNTOUCHED")
    os.symlink(outside, workspace / "link-out")
    local, local_port = serve()
    model, model_port = serve()
    settings = Settings(
        home=deck_home,
        claude_config_dir=tmp_path / "claude-config",
        sandbox_hosts={"allowed.test": "127.0.0.1", "not-allowed.test": "127.0.0.1"},
    )
    shutil.copyfile(PROBE, tmp_path / "probe.py")
    config = tmp_path / "probe.json"
    ip = host_ip()
    config.write_text(
        json.dumps(
            {
                "workspace": str(workspace),
                "outside": str(outside),
                "ssh_key": str(user / ".ssh" / "id_rsa"),
                "token": str(deck_home / "token"),
                "database": str(deck_home / "agentdeck.db"),
                "other_workspace_file": str(deck_home / "workspaces" / "other" / "secret.txt"),
                "daemon_pid": os.getpid(),
                "local_port": local_port,
                "host_ip": ip,
                "model_url": f"http://127.0.0.1:{model_port}/v1/models",
            }
        )
    )
    try:
        yield World(tmp_path, settings, workspace, outside, local_port, model_port, config, ip)
    finally:
        for server in (local, model):
            server.shutdown()
            server.server_close()


def shadow_path(tmp_path: Path, *missing: str) -> str:
    """A PATH with every program of this machine but ``missing``."""
    shadow = tmp_path / "bin"
    shadow.mkdir(exist_ok=True)
    for folder in ("/usr/local/bin", "/usr/bin", str(Path(sys.executable).parent)):
        for entry in Path(folder).iterdir():
            link = shadow / entry.name
            if entry.name not in missing and not link.exists():
                link.symlink_to(entry)
    return str(shadow)


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    path = shadow_path(tmp_path, "bwrap")
    monkeypatch.setenv("PATH", path)
    support.reset()
    yield path
    monkeypatch.undo()
    support.reset()
