"""A deck on several machines, on this one: API nodes (``agentdeck up``) and runner
hosts (``agentdeck runner``) as subprocesses, each with its own home, all on one
PostgreSQL database (``pg_url``), sharing one token (the deck's users are in the
database: the first node makes its token the admin's)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_env, spawn
from tests.support.waiting import eventually

TOKEN = "adk_cluster_test_token_0123456789abcdef"  # the file's token of every home
# An agent busy in one long tool call (45 s), then a closing text: for kill -9 and
# SIGSTOP of its host mid-turn (the tests and benchmarks/cluster.py).
SLOW_TURN = {
    "name": "slow-turn",
    "turns": [
        {
            "reply": [
                {"text": "Starting the job."},
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {
                            "command": 'python3 -c "import time; time.sleep(45)"',
                            "description": "the job",
                            "timeout": 120000,
                        },
                    }
                },
            ]
        },
        {"reply": [{"text": "Carried on after the job."}]},
    ],
}
HEARTBEAT = "0.5"
LEASE = "2"


class Node(Daemon):
    """An API node: ``agentdeck up`` (``--no-runner`` unless it runs agents too)."""

    def __init__(self, env: dict[str, str], *, runner: bool) -> None:
        super().__init__(env)
        self.runner = runner

    async def start(self) -> Node:
        self.proc = spawn(self.env, "up", *([] if self.runner else ["--no-runner"]))
        await self._ready()
        return self

    async def _ready(self) -> None:
        import json

        async def ready() -> dict[str, object] | None:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"node exited: {self.proc.communicate()}")
            try:
                info = json.loads((self.home / "daemon.json").read_text())
            except (OSError, ValueError):
                return None
            return info if info["pid"] == self.proc.pid else None

        self.info = await eventually(ready, timeout=60, what="the API node")
        self.url = f"http://127.0.0.1:{self.info['port']}"
        self.token = TOKEN


class RunnerHost:
    """``agentdeck runner --name NAME``: its output kept in ``log``."""

    def __init__(self, env: dict[str, str], name: str, *args: str) -> None:
        self.env = env
        self.name = name
        self.args = args
        self.log = Path(env["AGENTDECK_HOME"]).parent / f"runner-{name}.log"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> RunnerHost:
        with self.log.open("a") as out:  # the child keeps its own copy of the file
            self.proc = subprocess.Popen(
                [*deck_cmd(), "runner", "--name", self.name, *self.args],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        return self

    async def serving(self) -> RunnerHost:
        async def said() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"runner host {self.name} exited: {self.output()}")
            return f"runner host {self.name} serving" in self.output()

        await eventually(said, timeout=60, what=f"runner host {self.name}")
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def deck_cmd() -> list[str]:
    from tests.support.deckcli import deck_argv

    return deck_argv()


class Cluster:
    def __init__(self, base: Path, url: str) -> None:
        self.base = base
        self.url = url
        self.nodes: list[Node] = []
        self.hosts: list[RunnerHost] = []

    def env(self, name: str, **extra: str) -> dict[str, str]:
        root = self.base / name
        home = root / "home"
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        token = home / "token"
        token.write_text(TOKEN + "\n")
        token.chmod(0o600)
        settings = {
            "AGENTDECK_DATABASE_URL": self.url,
            "AGENTDECK_RUNNER_HEARTBEAT_SECONDS": HEARTBEAT,
            "AGENTDECK_RUNNER_LEASE_SECONDS": LEASE,
            "AGENTDECK_RUNNER_POLL_SECONDS": "0.3",
        }
        return deck_env(root, **{**settings, **extra})

    async def node(self, name: str, *, runner: bool = False) -> Node:
        node = Node(self.env(name), runner=runner)
        self.nodes.append(node)
        return await node.start()

    async def host(self, name: str, *args: str, lease: float | None = None) -> RunnerHost:
        """A runner host; ``lease``: its lease (heartbeat a fifth of it), else the tests'."""
        extra = {}
        if lease is not None:
            extra = {
                "AGENTDECK_RUNNER_LEASE_SECONDS": str(lease),
                "AGENTDECK_RUNNER_HEARTBEAT_SECONDS": str(lease / 5),
            }
        host = RunnerHost(self.env(name, **extra), name, *args)
        self.hosts.append(host)
        return await host.start().serving()

    def cli(self, name: str, *args: str) -> Any:
        return deck(self.env(name), *args)

    def stop(self) -> None:
        for host in self.hosts:
            host.stop()
        for node in self.nodes:
            node.stop()


def api(node: Node) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=node.url, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}
    )


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str) -> Iterator[Cluster]:
    made = Cluster(tmp_path, pg_url)
    try:
        yield made
    finally:
        made.stop()
