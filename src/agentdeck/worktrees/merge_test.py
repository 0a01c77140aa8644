"""A merge's test run: in the agent's sandbox, in a session of its own, with a
deadline, and never left behind.

The command comes from a person or the target's ``.agentdeck/merge.yaml``; what
it runs (a ``conftest.py``, a ``Makefile``) comes from the agent's branch, so it
runs as the agent's own commands do: through a ``Jail`` (the profile's sandbox)
when there is one, with the daemon's credentials left out of its environment,
and its output scrubbed before anyone sees it.

A stop cancels the run, which kills its process tree. A process that dies
mid-merge (``kill -9``) cannot: so the scratch worktree and the running test are
recorded in a file beside the merge lock (``agentdeck-merge-run.json``), and the
next merge of that repository, which holds the lock the dead process held, kills
what the record names (the same pid *and* start time: never a reused pid) and
removes the scratch worktree before it begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psutil

from agentdeck.files import atomic_write

logger = logging.getLogger(__name__)

RECORD = "agentdeck-merge-run.json"
READ_LIMIT = 256 * 1024  # of the test's output kept while it runs: its tail matters
# The daemon's own credentials never reach a test: settings, the model's keys.
_SECRET_NAME = re.compile(
    r"^(AGENTDECK_|ANTHROPIC_|CLAUDE_CODE_OAUTH)|TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|"
    r"CREDENTIAL|PRIVATE_KEY|^SSH_AUTH_SOCK$",
    re.IGNORECASE,
)


class Jail(Protocol):
    """Where the test runs (``sandbox.confine.Confinement`` is one)."""

    def command(self, program: Sequence[str]) -> list[str]: ...

    def env(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class TestRun:
    passed: bool
    output: str


def environment(jail: Jail | None) -> dict[str, str]:
    """What the test inherits: this process's environment without its credentials
    (agentdeck's settings, the model's keys, anything named like a secret)."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
    return {**env, **(jail.env() if jail is not None else {})}


async def run_test(
    command: str, cwd: Path, timeout: float, *, jail: Jail | None, record: Path
) -> TestRun:
    """``sh -c COMMAND`` in ``cwd`` (through ``jail``), its output merged; killed,
    with its whole tree, at the deadline or when the caller is cancelled."""
    argv = ["/bin/sh", "-c", command]
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *(jail.command(argv) if jail is not None else argv),
            cwd=str(cwd),
            env=environment(jail),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    )
    try:
        proc = await asyncio.shield(spawn)
    except BaseException:
        # Stopped while it was being made: it runs all the same (asyncio would kill
        # its first process only, and bubblewrap's inner ones lead sessions of
        # their own): made, then ended whole.
        with contextlib.suppress(Exception):
            made = await spawn
            await asyncio.shield(asyncio.to_thread(kill_tree, made.pid, group=True))
            await asyncio.shield(made.wait())
        raise
    try:
        _note_process(record, proc.pid)
        assert proc.stdout is not None
        tail = bytearray()

        async def read() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(65536):
                tail.extend(chunk)
                del tail[:-READ_LIMIT]
            await proc.wait()

        try:
            await asyncio.wait_for(read(), timeout)
        except TimeoutError:
            await asyncio.to_thread(kill_tree, proc.pid, group=True)
            await proc.wait()
            return TestRun(False, f"(the test command ran past {timeout:g} s and was killed)")
        # What it left in the background goes with it (its group outlives its
        # leader, and no new process takes a pid that is still a group's id).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return TestRun(proc.returncode == 0, tail.decode("utf-8", "replace"))
    except BaseException:  # stopped (the daemon stops, the merge is cancelled): so is the test
        await asyncio.shield(asyncio.to_thread(kill_tree, proc.pid, group=True))
        with contextlib.suppress(ProcessLookupError):
            await asyncio.shield(proc.wait())
        raise


FREEZE_ROUNDS = 50  # looks for new descendants before the kill (each finds some or ends it)


def kill_tree(pid: int, *, started: float | None = None, group: bool = False) -> list[int]:
    """SIGKILL ``pid``, its process group and every descendant (a sandbox's
    inner processes are in a session of their own: found through the tree,
    snapshotted before the first signal). ``started``: only if ``pid`` is still
    the process that started then; ``group``: ``pid`` is our child, leader of
    its own group (which outlives it: killed even once it has exited). Blocking.
    Returns the pids signalled.

    The tree is stopped (SIGSTOP) before it is looked at: bubblewrap starting up
    makes its inner process in a session of its own, and one made between the
    look and the kill would run on, out of reach."""
    try:
        root = psutil.Process(pid)
        if started is not None and abs(root.create_time() - started) > 0.05:
            return []  # the pid was reused: not ours to kill
        own_group = group or os.getpgid(pid) == pid  # as run_test made it
    except (psutil.NoSuchProcess, ProcessLookupError):
        root, own_group = None, group
    with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
        if own_group:
            os.killpg(pid, signal.SIGSTOP)
        elif root is not None:
            root.suspend()
    tree = _frozen(root) if root is not None else []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if own_group:
            os.killpg(pid, signal.SIGKILL)
    for proc in reversed(tree):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.send_signal(signal.SIGKILL)
    if left := _ended(tree, deadline=time.monotonic() + 5):
        logger.warning("merge test processes still there after SIGKILL: %s", left)
    return [p.pid for p in tree]


def _frozen(root: psutil.Process) -> list[psutil.Process]:
    """``root`` and every descendant, each stopped (SIGSTOP, and seen stopped: the
    signal lands a moment after it is sent, and a process may fork meanwhile) as
    it is found, until a look finds no one new: a stopped process forks no more,
    so none is made between the last look and the kill (bubblewrap's inner
    processes lead sessions of their own, out of the group's reach)."""
    found: dict[int, psutil.Process] = {root.pid: root}
    _stopped(root)
    for _ in range(FREEZE_ROUNDS):
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        new = [proc for proc in tree if proc.pid not in found]
        if not new:
            break
        for proc in new:
            found[proc.pid] = proc
            _stopped(proc)
    return list(found.values())


def _stopped(proc: psutil.Process, wait: float = 1.0) -> None:
    """SIGSTOP ``proc`` and wait (briefly) until it is stopped, or gone."""
    deadline = time.monotonic() + wait
    try:
        proc.suspend()
        while proc.status() not in _STILL and time.monotonic() < deadline:
            time.sleep(0.001)
    except psutil.Error:
        return


_STILL = (
    psutil.STATUS_STOPPED,
    psutil.STATUS_TRACING_STOP,
    psutil.STATUS_ZOMBIE,
    psutil.STATUS_DEAD,
)


def _ended(tree: list[psutil.Process], *, deadline: float) -> list[int]:
    """Wait until every process of ``tree`` has exited (a zombie has: whoever
    inherits it reaps it, and the root is asyncio's to reap); those left."""

    def running(proc: psutil.Process) -> bool:
        try:
            return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    left = [p for p in tree if running(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if running(p)]
    return [p.pid for p in left]


# -- the record beside the lock ------------------------------------------------------


def note_scratch(record: Path, scratch: Path) -> None:
    """A scratch worktree exists (before anything runs in it)."""
    _write(record, {"owner": os.getpid(), "scratch": str(scratch)})


def _note_process(record: Path, pid: int) -> None:
    data = _read(record) or {"owner": os.getpid()}
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return  # already over
    _write(record, {**data, "pid": pid, "started": started})


def forget(record: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        record.unlink()


def leftover(record: Path) -> tuple[list[int], Path | None]:
    """What a process that died mid-merge left (its record): the test processes
    killed now, and the scratch worktree to remove. Blocking; call it holding the
    merge lock (so the record's owner is gone, or it is this process)."""
    data = _read(record)
    if data is None:
        return [], None
    killed: list[int] = []
    pid, started = data.get("pid"), data.get("started")
    if isinstance(pid, int) and isinstance(started, int | float):
        killed = kill_tree(pid, started=float(started))
        if killed:
            logger.warning("killed a merge test left running by process %s: %s",
                           data.get("owner"), killed)  # fmt: skip
    scratch = data.get("scratch")
    if not isinstance(scratch, str):
        return killed, None
    # Died before it could note the test's pid: whatever still works in the
    # scratch worktree is that test (each attempt has a worktree of its own).
    for proc in psutil.process_iter(["cwd"]):
        cwd = proc.info.get("cwd") or ""
        if proc.pid != os.getpid() and (cwd == scratch or cwd.startswith(scratch + "/")):
            killed += kill_tree(proc.pid)
    return killed, Path(scratch)


def _read(record: Path) -> dict[str, object] | None:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write(record: Path, data: dict[str, object]) -> None:
    atomic_write(record, json.dumps(data), mode=0o600)
