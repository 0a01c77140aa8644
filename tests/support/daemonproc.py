"""A daemon as a user runs it (``agentdeck up`` in a subprocess), for tests that
drive it from the outside."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.deckcli import spawn
from tests.support.waiting import eventually


class Daemon:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.home = Path(env["AGENTDECK_HOME"])
        self.proc: subprocess.Popen[str] | None = None

    async def start(self) -> Daemon:
        self.proc = spawn(self.env, "up")

        async def ready() -> dict[str, object] | None:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited: {self.proc.communicate()}")
            try:
                info = json.loads((self.home / "daemon.json").read_text())
            except (OSError, ValueError):
                return None
            return info if info["pid"] == self.proc.pid else None

        self.info = await eventually(ready, timeout=60, what="the daemon")
        self.url = f"http://127.0.0.1:{self.info['port']}"
        self.token = (self.home / "token").read_text().strip()
        return self

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, timeout=30, headers={"Authorization": f"Bearer {self.token}"}
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        if self.proc is not None:
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    """Daemons a test started; each is stopped (SIGTERM) at the end."""
    started: list[Daemon] = []
    yield started
    for d in started:
        d.stop()
