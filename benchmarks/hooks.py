"""The hook client's cost per event: a PreToolUse decision from spawn to exit.

    .venv/bin/python benchmarks/hooks.py [--runs 50] [--no-daemon]

Claude Code runs the hook command for every tool call and waits for it, so its
cost is paid on every step. Each run is a fresh process fed the same PreToolUse
payload (``Bash(git status)`` in a workspace), timed from spawn to exit (its
decision printed), alternating within each round with the floor: a bare
``python -S -c 'import json,sys; json.load(sys.stdin)'`` on the same stdin,
i.e. an interpreter that reads the event and does nothing with it.

- ``client``: ``python -S client.py HOME`` exactly as the installer writes it,
  against a real daemon (``agentdeck up --port 0`` in a fresh AGENTDECK_HOME,
  ``hooks.json`` written by ``write_client_config``); with ``--no-daemon``,
  against a ``HookSocketServer`` in this process whose handler asks the real
  policy engine (``decide`` under the shipped ``default`` profile);
- ``daemon down``: the same client with no socket (its fallback path);
- ``in-process``: ``run()`` without a process, i.e. the round trip through the
  socket and the daemon's decision alone.

Every client run is checked: exit 0 and the daemon's answer, not a fallback:
under the default ``AGENTDECK_HOOK_GOVERNANCE=deny-and-ask`` that is no decision
at all for ``git status`` (no deny or ask rule matches; Claude Code decides).
The goal: a median client/floor ratio of at most 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import REPO, clean_env, header, median, percentile
from agentdeck.core.policy import decide
from agentdeck.governance.profiles import load_profile
from agentdeck.hooks import hookclient_impl
from agentdeck.hooks.config import write_client_config
from agentdeck.hooks.protocol import HookHandler, HookReply, HookRequest
from agentdeck.hooks.socket_server import HookSocketServer
from agentdeck.settings import Settings

GOAL_RATIO = 1.5
RUN_TIMEOUT = 30.0
DAEMON_START_TIMEOUT = 60.0
SOCKET_AFTER_DAEMON_TIMEOUT = 10.0  # daemon.json is there; the hook socket should follow
POLL = 0.05
WARMUP = 3
CLIENT = Path(hookclient_impl.__file__).with_name("client.py")
FLOOR = [sys.executable, "-S", "-c", "import json,sys; json.load(sys.stdin)"]


class RunFailed(RuntimeError):
    pass


def payload(workspace: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": str(workspace / "transcript.jsonl"),
            "cwd": str(workspace),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status", "description": "status"},
            "tool_use_id": "toolu_bench",
        }
    ).encode()


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        argv, input=stdin, capture_output=True, env=env, timeout=RUN_TIMEOUT, check=False
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RunFailed(f"{argv[-1]}: exit {proc.returncode}\n{proc.stderr.decode()[-2000:]}")
    return wall, proc.stdout.decode()


def decision_of(stdout: str, *, fallback: bool = False) -> str:
    """The printed permission decision; RunFailed unless it is the daemon's
    (or, with ``fallback``, the client's own). Nothing printed is the daemon's
    "no decision" (deny-and-ask: no deny or ask rule matched)."""
    if not fallback and not stdout.strip():
        return "none (Claude Code's own rules decide)"
    try:
        output = json.loads(stdout)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RunFailed(f"no PreToolUse decision printed: {stdout!r}") from exc
    is_fallback = "agentdeck is not reachable" in output.get("permissionDecisionReason", "")
    if is_fallback != fallback:
        raise RunFailed(f"unexpected {'daemon' if fallback else 'fallback'} answer: {stdout!r}")
    return str(output["permissionDecision"])


# -- the daemon end ------------------------------------------------------------------


def policy_handler(workspace: Path) -> HookHandler:
    profile = load_profile("default")

    async def handle(request: HookRequest) -> HookReply:
        event = request.event
        verdict = decide(
            profile,
            str(event.get("tool_name", "")),
            event.get("tool_input") or {},
            workspace=str(event.get("cwd") or workspace),
            home=str(Path.home()),
        )
        output = {
            "hookEventName": "PreToolUse",
            "permissionDecision": str(verdict.decision),
            "permissionDecisionReason": verdict.reason,
        }
        return HookReply(stdout=json.dumps({"hookSpecificOutput": output}))

    return handle


@contextmanager
def in_process_daemon(home: Path, workspace: Path) -> Iterator[str]:
    """A HookSocketServer with the policy engine behind it, on a thread's loop."""
    settings = Settings(home=home)
    write_client_config(settings, load_profile("default").default)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = HookSocketServer()

    def call(coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, loop).result(RUN_TIMEOUT)

    call(server.start(settings.socket_path, policy_handler(workspace)))
    try:
        yield "in-process HookSocketServer + decide(default profile)"
    finally:
        call(server.close())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(RUN_TIMEOUT)
        loop.close()


@contextmanager
def real_daemon(home: Path) -> Iterator[str]:
    """``agentdeck up --port 0`` in ``home``, once its hook socket accepts."""
    settings = Settings(home=home)
    agentdeck = Path(sys.executable).with_name("agentdeck")
    env = clean_env(AGENTDECK_HOME=str(home), AGENTDECK_CLAUDE_CONFIG_DIR=str(home / "claude"))
    log = (home.parent / "daemon.log").open("w")
    proc = subprocess.Popen(
        [str(agentdeck), "up", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_socket(proc, home, settings.socket_path)
        write_client_config(settings, load_profile("default").default)
        yield f"agentdeck up --port 0 (pid {proc.pid})"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def wait_for_socket(proc: subprocess.Popen[bytes], home: Path, path: Path) -> None:
    started = time.monotonic()
    info_seen_at: float | None = None
    while True:
        if proc.poll() is not None:
            log = (home.parent / "daemon.log").read_text()[-2000:]
            sys.exit(f"agentdeck up exited with {proc.returncode}:\n{log}")
        if accepts(path):
            return
        now = time.monotonic()
        if info_seen_at is None and (home / "daemon.json").exists():
            info_seen_at = now
        if info_seen_at is not None and now - info_seen_at > SOCKET_AFTER_DAEMON_TIMEOUT:
            log = (home.parent / "daemon.log").read_text()[-2000:]
            sys.exit(f"the daemon is up but serves no hook socket at {path}; its log:\n{log}")
        if now - started > DAEMON_START_TIMEOUT:
            sys.exit(f"agentdeck up did not start within {DAEMON_START_TIMEOUT:g}s")
        time.sleep(POLL)


def accepts(path: Path) -> bool:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        return False
    finally:
        sock.close()
    return True


# -- the measurement -------------------------------------------------------------------


def summary(label: str, walls: list[float], floor: float) -> str:
    med = median(walls)
    return (
        f"  {label:<34} {med * 1000:>7.1f} {percentile(walls, 90) * 1000:>7.1f} "
        f"{min(walls) * 1000:>7.1f} {med / floor:>6.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="runs per variant")
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer from a HookSocketServer in this process instead of agentdeck up",
    )
    args = parser.parse_args()
    header("hooks: the hook client per PreToolUse event vs a bare python -S floor")

    tmp = Path(tempfile.mkdtemp(prefix="agentdeck-hooks-"))
    try:
        home, workspace, down = tmp / "home", tmp / "work", tmp / "down"
        for d in (home, workspace, down):
            d.mkdir()
        stdin = payload(workspace)
        env = clean_env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's shell has it
        client = [sys.executable, "-S", str(CLIENT), str(home)]
        client_down = [sys.executable, "-S", str(CLIENT), str(down)]
        daemon = in_process_daemon(home, workspace) if args.no_daemon else real_daemon(home)
        with daemon as what:
            print(f"  daemon: {what}")
            print(
                f"  {args.runs} runs per variant, floor and client alternating; "
                f"wall time from spawn to exit; {WARMUP} warm-up runs each (fill the .pyc)"
            )
            for _ in range(WARMUP):
                timed(FLOOR, stdin, env)
                decision_of(timed(client, stdin, env)[1])
                timed(client_down, stdin, env)
            walls: dict[str, list[float]] = {"floor": [], "client": [], "down": []}
            decisions: set[str] = set()
            for i in range(args.runs):
                order = ["floor", "client", "down"]
                order = order[i % 3 :] + order[: i % 3]
                for variant in order:
                    argv = {"floor": FLOOR, "client": client, "down": client_down}[variant]
                    wall, out = timed(argv, stdin, env)
                    if variant == "client":
                        decisions.add(decision_of(out))
                    elif variant == "down" and out.strip():
                        decision_of(out, fallback=True)  # "pass" (the default) prints nothing
                    walls[variant].append(wall)
            in_process = []
            for _ in range(args.runs):
                started = time.perf_counter()
                code, out, _ = hookclient_impl.run(["client.py", str(home)], stdin, {})
                in_process.append(time.perf_counter() - started)
                if code != 0:
                    raise RunFailed(f"in-process run: exit {code}")
                decisions.add(decision_of(out))

        floor = median(walls["floor"])
        print(f"  decision printed: {', '.join(sorted(decisions))} (Bash(git status))")
        print()
        print(f"  {'variant':<34} {'median':>7} {'p90':>7} {'min':>7} {'ratio':>7}  (ms)")
        print(summary("floor: python -S, json.load(stdin)", walls["floor"], floor))
        print(summary("client -> daemon -> decision", walls["client"], floor))
        print(summary("client, daemon down (fallback)", walls["down"], floor))
        print(summary("in-process run(), no spawn", in_process, floor))
        ratio = median(walls["client"]) / floor
        met = "met" if ratio <= GOAL_RATIO else "MISSED"
        print()
        print(f"  client/floor median ratio {ratio:.2f} (goal <= {GOAL_RATIO}): {met}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(REPO)
    main()
