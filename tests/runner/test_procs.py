"""Stopping a process tree: every process goes, and the tree's root, our child,
keeps its exit status for whoever waits for it (asyncio, for the SDK)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time

import psutil
import pytest

from agentdeck.runner import procs
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

TREE = ["sh", "-c", "sleep 60 & exec sleep 60"]  # its root does not end with its child


async def _tree_of(pid: int, size: int) -> list[psutil.Process]:
    async def whole() -> list[psutil.Process]:
        found = procs.process_tree(pid)
        return found if len(found) >= size else []

    return await eventually(whole, what=f"a tree of {size} processes")


async def test_a_stopped_childs_exit_status_is_left_to_asyncio() -> None:
    child = await asyncio.create_subprocess_exec(*TREE)
    tree = await _tree_of(child.pid, 2)
    killed = await asyncio.to_thread(procs.terminate_tree, child.pid, 5.0)
    assert killed == []
    # Not 255 ("unknown child process"): nobody reaped it behind asyncio's back.
    assert await asyncio.wait_for(child.wait(), 5) == -signal.SIGTERM
    assert procs.alive(tree) == []


async def test_an_ended_process_nobody_reaped_yet_does_not_hold_up_the_stop() -> None:
    child = await asyncio.to_thread(subprocess.Popen, TREE)  # reaped when we wait for it
    try:
        await _tree_of(child.pid, 2)
        began = time.monotonic()
        await asyncio.to_thread(procs.terminate_tree, child.pid, 10.0)
        took = time.monotonic() - began
        assert child.returncode is None  # still a zombie, ours to reap
    finally:
        code = await asyncio.to_thread(child.wait, 5)
    assert code == -signal.SIGTERM
    assert took < 5, f"a stop of a tree that ended at once took {took:.1f} s"


def test_a_reused_pid_is_not_the_process_a_row_names() -> None:
    """A pid read from the database is the process it names only if that process
    already ran when the row was written: one started since is a reuse."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        started = psutil.Process(proc.pid).create_time()
        assert procs.runs_since(proc.pid, started + 5)  # written while it ran
        assert not procs.runs_since(proc.pid, started - 60)  # written before it began
    finally:
        proc.kill()
        proc.wait()
    assert not procs.runs_since(proc.pid, time.time())  # gone
    assert not procs.runs_since(None, time.time())
