"""The hook client as Claude Code runs it, and a daemon end for it to talk to.

``run_client`` spawns ``python -S client.py HOME`` exactly as the installer
writes it. ``ServerThread`` runs a real ``HookSocketServer`` on its own event
loop in a thread, so synchronous tests (and hypothesis) can talk to it; the
handler is our seam: it records each request and answers with ``decide``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import agentdeck.hooks
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.hooks.socket_server import HookSocketServer

CLIENT = Path(agentdeck.hooks.__file__).with_name("client.py")
SPAWN_TIMEOUT = 30.0
SERVER_TIMEOUT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Hooked:
    """One finished client run."""

    code: int
    out: str
    err: str
    wall: float

    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def hook_env(**extra: str) -> dict[str, str]:
    """This environment without anything that would steer agentdeck or look
    like Claude Code, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTDECK_", "CLAUDE"))}
    env.update(extra)
    return env


def client_argv(home: Path) -> list[str]:
    return [sys.executable, "-S", str(CLIENT), str(home)]


def run_client(
    home: Path,
    stdin: bytes | dict[str, Any],
    *,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> Hooked:
    """Spawn the client on ``stdin`` and time it from spawn to exit."""
    data = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
    started = time.perf_counter()
    proc = subprocess.run(
        argv or client_argv(home),
        input=data,
        capture_output=True,
        env=env if env is not None else hook_env(),
        timeout=SPAWN_TIMEOUT,
        check=False,
    )
    wall = time.perf_counter() - started
    return Hooked(proc.returncode, proc.stdout.decode(), proc.stderr.decode(), wall)


def write_hooks_json(
    home: Path,
    *,
    socket: Path | None = None,
    deadline: float = 2.0,
    fallbacks: dict[str, str] | None = None,
) -> None:
    config = {
        "socket": str(socket or home / "daemon.sock"),
        "deadline": deadline,
        "fallbacks": fallbacks or {"PreToolUse": "ask"},
    }
    (home / "hooks.json").write_text(json.dumps(config))


def echo(request: HookRequest) -> HookReply:
    """Answer with what arrived, so a test can check it crossed intact."""
    return HookReply(stdout=json.dumps({"event": request.event, "env": request.env}))


@dataclass
class Recorder:
    """The handler at our seam: records requests, answers with ``decide``."""

    decide: Callable[[HookRequest], HookReply] = echo
    requests: list[HookRequest] = field(default_factory=list)

    async def __call__(self, request: HookRequest) -> HookReply:
        self.requests.append(request)
        return self.decide(request)


class ServerThread:
    """A ``HookSocketServer`` on its own event loop in a daemon thread."""

    def __init__(self, path: Path, handler: Recorder, **server_args: Any) -> None:
        self.path = path
        self.handler = handler
        self.server = HookSocketServer(**server_args)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(SERVER_TIMEOUT)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        self.call(self.server.start(self.path, self.handler))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.call(self.server.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(SERVER_TIMEOUT)
            self.loop.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def daemon(home: Path, recorder: Recorder) -> Iterator[ServerThread]:
    """A real hook socket at ``home/daemon.sock``, answering through ``recorder``."""
    write_hooks_json(home)
    with ServerThread(home / "daemon.sock", recorder) as server:
        yield server
