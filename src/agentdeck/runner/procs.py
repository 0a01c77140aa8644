"""Process hygiene: find a CLI's process tree, stop it, leave no orphans.

Claude Code runs tools as children (``/bin/sh -c …``) that may spawn their own
children. Killing only the CLI could orphan them, so a stop always takes the
whole tree, snapshotted *before* the first signal (a dead parent's children are
re-parented and no longer findable through it).

And the signals that tell a supervising process (the daemon, an embedded run)
to end: handled, so that it stops its agents first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

import psutil

logger = logging.getLogger(__name__)


def process_tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants; empty if it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


def _signal_all(procs: list[psutil.Process], sig: signal.Signals) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue


def terminate_tree(pid: int, grace: float = 3.0) -> list[int]:
    """SIGTERM the tree, wait up to ``grace``, SIGKILL what is left.

    Blocking (call it in a thread from async code). Returns the pids that had
    to be killed with SIGKILL.
    """
    return terminate_trees([pid], grace)


def terminate_trees(pids: list[int], grace: float = 3.0) -> list[int]:
    """``terminate_tree`` for several trees at once: one grace for all of them."""
    found = {p.pid: p for pid in pids for p in process_tree(pid)}  # trees may overlap
    procs = list(found.values())
    if not procs:
        return []
    # Children first so a shell does not get the chance to respawn anything.
    _signal_all(list(reversed(procs)), signal.SIGTERM)
    survivors = _wait_ended(procs, grace)
    if survivors:
        logger.warning("SIGKILL for %d process(es) that ignored SIGTERM", len(survivors))
        _signal_all(survivors, signal.SIGKILL)
        _wait_ended(survivors, grace)
    return [p.pid for p in survivors]


def _wait_ended(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of ``procs`` still running at the deadline. A process that exited is
    ended even while nobody has reaped it yet: the tree's root is our child,
    whose exit status is asyncio's to collect (``psutil.wait_procs`` would reap
    it first, and the SDK would read 255), and a sandbox's inner processes are
    reaped by whichever init inherits them, which may take its time."""
    deadline = time.monotonic() + timeout
    left = alive(procs)
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = alive(left)
    return left


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until none of ``pids`` runs; return those still running at the deadline."""
    deadline = time.monotonic() + timeout
    remaining = list(pids)
    while remaining and time.monotonic() < deadline:
        remaining = [p for p in remaining if _running(p)]
        if remaining:
            time.sleep(0.02)
    return remaining


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def is_running(pid: int | None) -> bool:
    return pid is not None and _running(pid)


# Clock slack between a process's start time (the kernel's, in jiffies since boot)
# and a row's timestamps (wall clock).
_START_SLACK_SECONDS = 1.0


def runs_since(pid: int | None, at: float) -> bool:
    """Whether ``pid`` runs a process that was already running at ``at`` (a wall
    clock time: when a row naming it was written). A pid from the database may
    have been reused since: a process started after the row is not the one the
    row means."""
    if pid is None:
        return False
    try:
        proc = psutil.Process(pid)
        return (
            proc.status() != psutil.STATUS_ZOMBIE
            and proc.create_time() <= at + _START_SLACK_SECONDS
        )
    except psutil.NoSuchProcess:
        return False


def looks_like_claude(pid: int) -> bool:
    """Whether ``pid`` runs Claude Code — checked before killing a pid read from
    the database, which may have been reused by an unrelated process."""
    try:
        proc = psutil.Process(pid)
        words = [proc.name(), *proc.cmdline()]
    except psutil.Error:
        return False
    return any("claude" in word.lower() for word in words)


def end_leftover(pid: int | None, since: float, grace: float, agent_id: str | None = None) -> None:
    """Stop the Claude Code a database row names (written at ``since``), if that pid
    is still that process, and (given ``agent_id``) whatever still carries the
    row's agent (``carrying``): once the pid has ended, the tree no longer leads
    there. Blocking (call it in a thread from async code)."""
    roots = []
    if pid is not None and runs_since(pid, since) and looks_like_claude(pid):
        roots.append(pid)
    if agent_id is not None:
        roots += [p for p in carrying(agent_id) if p not in roots]
    if roots:
        terminate_trees(roots, grace)


# Set in every agent's Claude Code process (``runner.options.agent_env``) and so
# inherited by all it starts: the sandbox's bubblewrap and its init, the relay,
# tools and what they leave in the background.
AGENT_ENV = "AGENTDECK_AGENT_ID"


RUNNER_ENV = "AGENTDECK_RUNNER_PID"  # set beside AGENT_ENV: the process supervising it

# An agent's ``extra`` key: the id its processes carry in ``AGENT_ENV`` when that is
# not its own — a runner host's warm process, started under an id of the host's
# before the queued agent that adopted it was claimed.
CARRIED = "carried_id"


def carried_id(agent_id: str, extra: Mapping[str, Any]) -> str:
    """The id the agent's processes carry (``AGENT_ENV``): its own, or ``CARRIED``."""
    value = extra.get(CARRIED)
    return value if isinstance(value, str) and value else agent_id


def carrying(agent_id: str, runner_pid: int | None = None) -> list[int]:
    """The processes whose environment names agent ``agent_id`` (``AGENT_ENV``),
    wherever they were re-parented: what an agent leaves behind when its Claude
    Code process ends — a process started in the background that left its
    session, and in a sandbox the pid namespace's init, which waits for every
    process in it and so lives on with it, holding Claude Code's output open.
    Never this process or its ancestors (an agentdeck that an agent started
    carries that agent's id). ``runner_pid``: only those this supervisor started
    (another runner host on this machine may run the agent now). Blocking."""
    own = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        own.update(p.pid for p in psutil.Process().parents())
    found = []
    for proc in psutil.process_iter():
        if proc.pid in own:
            continue
        try:
            env = proc.environ()
            if env.get(AGENT_ENV) != agent_id:
                continue
            if runner_pid is None or env.get(RUNNER_ENV) == str(runner_pid):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def end_carrying(agent_id: str, grace: float, runner_pid: int | None = None) -> list[int]:
    """Stop every process that carries ``agent_id`` (of ``runner_pid``'s, if given),
    with its tree (SIGTERM, then SIGKILL after ``grace``); the pids found. Blocking."""
    found = carrying(agent_id, runner_pid)
    if found:
        logger.info("agent %s left %d process(es) running: stopping them", agent_id, len(found))
        terminate_trees(found, grace)
    return found


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals, besides SIGINT, that a process supervising agents handles by
    stopping them before it ends: SIGTERM, and SIGHUP (its terminal is gone)
    unless it was started to ignore hang-ups (``nohup``)."""
    ignored = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    return (signal.SIGTERM,) if ignored else (signal.SIGTERM, signal.SIGHUP)


def leave_terminal() -> None:
    """Standard output and error that are a terminal go to ``/dev/null`` from now
    on: the terminal hung up, and a write to it would fail."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            fd = stream.fileno()
            if os.isatty(fd):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, fd)
                os.close(devnull)
