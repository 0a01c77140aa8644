"""Door 9: nothing agentdeck starts outlives it.

A hostile model asks for a permission (so its agent waits on an approval, a
turn that cannot end by itself) after starting a process that leaves its
parent's session to outlive it (``setsid sleep``), inside a ``process``
sandbox whose bubblewrap leads a session of its own. Then its supervisor dies
each way a supervisor dies: SIGTERM, a terminal hang-up (SIGHUP), Ctrl-C twice,
and kill -9 (then the next command, or the next daemon, reconciles). Each time,
within a deadline, no process the supervisor started is left (found by its
descendants, followed while it lives, and by an environment marker that every
process it starts inherits, re-parented or not), nor its sandbox's private
directory, and the agent says how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from agentdeck.cli.ending import Ending, watch
from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.runner import procs
from agentdeck.store.store import Store
from tests.conftest import make_settings
from tests.sandbox.conftest import needs_bwrap
from tests.support.daemonproc import Daemon
from tests.support.deckcli import deck, deck_argv, deck_env, spawn
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli, needs_bwrap]

MARK = "DECK_TEST_TREE"  # every process a supervisor under test starts inherits it
DEADLINE = 20.0  # seconds from the signal to the supervisor's end
# From a supervisor's end to nothing of it running: it stops them before it ends,
# so this is only the kernel's moment (left alone, an orphaned Claude Code ends
# about 3 s after its input does).
AT_EXIT = 1.0
# A supervisor started under nohup ignores hang-ups, as it should: so would these.
UNDER_NOHUP = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
hangs_up = pytest.mark.skipif(UNDER_NOHUP, reason="the tests run with SIGHUP ignored (nohup)")
ESCAPEE = "setsid sleep 1717"  # the hostile model's process that leaves its session


def _world(tmp_path: Path) -> tuple[str, str]:
    """A profile that confines the whole process (required) and asks before any
    command but the escapee, and a model that starts the escapee and then wants
    a command that needs an approval."""
    profile = tmp_path / "boxed-ask.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "name": "boxed-ask",
                "default": "ask",
                "allow": ["Read", "Bash(setsid:*)"],
                "sandbox": {"mode": "process", "required": True},
            }
        )
    )
    scenario = tmp_path / "outlive.yaml"
    bash = "Bash"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "outlive",
                "turns": [
                    {
                        "reply": [
                            {"text": "I will outlive you."},
                            {
                                "tool_use": {
                                    "name": bash,
                                    "input": {"command": f"{ESCAPEE} > /dev/null 2>&1 &"},
                                }
                            },
                        ]
                    },
                    {"reply": [{"tool_use": {"name": bash, "input": {"command": "touch x"}}}]},
                    {"reply": [{"text": "Done."}]},
                ],
            }
        )
    )
    return str(profile), str(scenario)


class Tree:
    """Every process a supervisor under test started: its descendants, noted
    while it lives (bubblewrap leads its own session but stays its child), and
    every process with the marker in its environment (found wherever it was
    re-parented)."""

    def __init__(self) -> None:
        self.mark = uuid.uuid4().hex
        self.seen: dict[int, psutil.Process] = {}
        self.root: int | None = None

    def env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, MARK: self.mark}

    def note(self, pid: int) -> list[psutil.Process]:
        """The descendants of ``pid`` now, remembered."""
        self.root = pid
        found = procs.process_tree(pid)[1:]
        for p in found:
            self.seen.setdefault(p.pid, p)
        return found

    def marked(self) -> list[psutil.Process]:
        out = []
        for p in psutil.process_iter():
            if p.pid == self.root:
                continue
            with contextlib.suppress(psutil.Error):
                if p.environ().get(MARK) == self.mark:
                    out.append(p)
        return out

    def names(self) -> set[str]:
        out = set()
        for p in self.seen.values():
            with contextlib.suppress(psutil.Error):
                out.add(" ".join(p.cmdline()))
        return out

    def left(self) -> list[psutil.Process]:
        """What still runs (a zombie has ended: only its parent's wait is missing)."""
        found = {p.pid: p for p in procs.alive(list(self.seen.values()))}
        for p in procs.alive(self.marked()):
            found.setdefault(p.pid, p)
        return list(found.values())

    async def gone(self, timeout: float = DEADLINE) -> None:
        async def none_left() -> bool:
            return not self.left()

        try:
            await eventually(none_left, timeout=timeout, what="no process left")
        except AssertionError:
            raise AssertionError(f"left running: {describe(self.left())}") from None


def describe(found: list[psutil.Process]) -> list[str]:
    out = []
    for p in found:
        with contextlib.suppress(psutil.Error):
            out.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
    return out


def private_dirs(pid: int) -> list[Path]:
    """The sandbox private directories the process ``pid`` made (directly in the
    temporary directory, or in agentdeck's directory there)."""
    tmp = Path(tempfile.gettempdir())
    name = f"agentdeck-sbx-{pid}-*"
    return [*tmp.glob(name), *tmp.glob(f"agentdeck-sbx-*/{name}")]


@contextlib.contextmanager
def cleanup(tree: Tree) -> Iterator[None]:
    """Whatever a failing test leaves is killed, so it fails alone."""
    try:
        yield
    finally:
        for p in tree.left():
            with contextlib.suppress(psutil.Error):
                p.kill()


@pytest.fixture
def world(tmp_path: Path) -> tuple[str, str]:
    return _world(tmp_path)


@pytest.fixture
def tree() -> Iterator[Tree]:
    t = Tree()
    with cleanup(t):
        yield t


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    home = tmp_path / "home"
    home.mkdir(parents=True, exist_ok=True)
    async with Store.open(home / "agentdeck.db") as s:
        yield s


async def awaiting_approval(store: Store, tree: Tree, pid: int) -> Any:
    """The agent once it waits on its approval, its escapee running, the whole
    tree noted (the sandbox's bubblewrap and Claude Code in it)."""

    async def probe() -> Any:
        agents = await store.list_agents()
        if not agents or agents[0].state is not AgentState.AWAITING_PERMISSION:
            return None
        found = tree.note(pid)
        cmds = [" ".join(p.cmdline()) for p in procs.alive(found)]
        if any("sleep 1717" in c for c in cmds):
            return agents[0]
        return None

    # 180 s: on a loaded 2-core machine the start and the first turn took past 90 s.
    agent = await eventually(probe, timeout=180, what="an agent waiting on an approval")
    names = tree.names()
    assert any(n.startswith(("bwrap", "/usr/bin/bwrap")) for n in names), names
    assert agent.extra.get("sandbox") == "process"
    return agent


def run_args(world: tuple[str, str]) -> list[str]:
    profile, scenario = world
    return ["run", "--profile", profile, "--scenario", scenario, "make x"]


def finish(proc: subprocess.Popen[str], timeout: float = DEADLINE) -> int:
    try:
        proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the run did not end within {timeout}s") from None
    return proc.returncode


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=hangs_up)])
async def test_a_signalled_embedded_run_leaves_nothing(
    tmp_path: Path, world: tuple[str, str], tree: Tree, store: Store, sig: signal.Signals
) -> None:
    env = tree.env(deck_env(tmp_path))
    run = spawn(env, *run_args(world))
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        run.send_signal(sig)
        assert finish(run) == 128 + sig
        # It ends once its processes have: nothing may live on after it.
        await tree.gone(timeout=AT_EXIT)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert private_dirs(run.pid) == []
    stopped = await store.get_agent(agent.id)
    assert stopped.state is AgentState.INTERRUPTED, stopped
    assert stopped.last_error == f"stopped: agentdeck run got {sig.name}"
    assert stopped.pid is None


def in_a_terminal(env: dict[str, str], args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """``agentdeck ARGS`` leading a session whose controlling terminal is a new
    pty, as a shell in a terminal window starts it; and the pty's master side."""
    master, slave = os.openpty()
    take_tty = (
        "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    run = subprocess.Popen(
        [sys.executable, "-c", take_tty, *deck_argv(*args)],
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    return run, master


@hangs_up
async def test_a_hung_up_terminal_ends_the_run_and_all_it_started(
    tmp_path: Path, world: tuple[str, str], tree: Tree, store: Store
) -> None:
    """The run in a terminal of its own (its controlling tty, output and all);
    the terminal closes: the kernel hangs up on it."""
    run, master = in_a_terminal(tree.env(deck_env(tmp_path)), run_args(world))
    shown: list[bytes] = []

    def drain() -> None:  # a terminal shows what it is sent; a full one would block the run
        with contextlib.suppress(OSError):
            while chunk := os.read(master, 65536):
                shown.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    closed = False
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        os.close(master)  # the terminal window closes
        closed = True
        run.wait(timeout=DEADLINE)
        assert run.returncode == 128 + signal.SIGHUP, b"".join(shown)[-2000:]
        await tree.gone(timeout=AT_EXIT)
    finally:
        if not closed:
            os.close(master)
        if run.poll() is None:
            run.kill()
            run.wait()
        reader.join(timeout=5)
    assert private_dirs(run.pid) == []
    stopped = await store.get_agent(agent.id)
    assert stopped.state is AgentState.INTERRUPTED
    assert stopped.last_error == "stopped: agentdeck run got SIGHUP"


async def test_ctrl_c_twice_leaves_nothing(
    tmp_path: Path, world: tuple[str, str], tree: Tree, store: Store
) -> None:
    env = tree.env(deck_env(tmp_path))
    run = spawn(env, *run_args(world))
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        run.send_signal(signal.SIGINT)

        async def asked() -> bool:
            notices = await store.read(agent_id=agent.id, types=[EventType.NOTICE])
            return any(e.data.get("kind") == "interrupt" for e in notices)

        await eventually(asked, timeout=DEADLINE, what="the interrupt asked for")
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
        assert finish(run) == 1
        await tree.gone()
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert private_dirs(run.pid) == []
    stopped = await store.get_agent(agent.id)
    assert stopped.state in {AgentState.KILLED, AgentState.INTERRUPTED}
    assert stopped.pid is None


@pytest.mark.parametrize("next_one", ["kill", "daemon"])
async def test_after_kill_9_the_next_command_or_daemon_stops_the_leftovers(
    tmp_path: Path,
    world: tuple[str, str],
    tree: Tree,
    store: Store,
    daemons: list[Daemon],
    next_one: str,
) -> None:
    env = tree.env(deck_env(tmp_path))
    run = spawn(env, *run_args(world))
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        run.kill()  # kill -9: nothing of it runs
        run.communicate(timeout=DEADLINE)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()

    # Its input gone, Claude Code ends in seconds, and with it the pid its row
    # names; the sandbox's init lives on with the escapee (it waits for every
    # process in its namespace), no longer in any tree that pid leads to.
    async def claude_code_ended() -> bool:
        return not procs.is_running(agent.pid)

    await eventually(claude_code_ended, timeout=DEADLINE, what="Claude Code's own end")
    assert any("sleep 1717" in " ".join(p.cmdline()) for p in tree.left()), describe(tree.left())
    clean = {k: v for k, v in env.items() if k != MARK}  # the next one is not under test
    if next_one == "kill":
        done = deck(clean, "kill", agent.id, "--json")
        assert done.code == 0, done.err
        assert done.json()["state"] in {"killed", "interrupted"}
    else:
        daemons.append(await Daemon(clean).start())
    await tree.gone()
    assert private_dirs(run.pid) == []
    stopped = await store.get_agent(agent.id)
    assert not stopped.state.is_live and stopped.pid is None


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=hangs_up)])
async def test_a_signalled_daemon_leaves_nothing(
    tmp_path: Path, world: tuple[str, str], tree: Tree, daemons: list[Daemon], sig: signal.Signals
) -> None:
    profile, scenario = world
    daemon = await Daemon(tree.env(deck_env(tmp_path))).start()
    daemons.append(daemon)
    assert daemon.proc is not None
    async with daemon.api() as api:
        created = await api.post(
            "/api/agents", json={"prompt": "make x", "scenario": scenario, "profile": profile}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]
        async with Store.open(daemon.home / "agentdeck.db") as store:
            await awaiting_approval(store, tree, daemon.proc.pid)
    daemon.proc.send_signal(sig)
    assert finish(daemon.proc) == 0
    await tree.gone(timeout=AT_EXIT)
    assert private_dirs(daemon.proc.pid) == []
    async with Store.open(daemon.home / "agentdeck.db") as store:
        stopped = await store.get_agent(agent_id)
    assert stopped.state is AgentState.INTERRUPTED and stopped.pid is None


# -- focused -------------------------------------------------------------------------


async def test_stop_now_does_not_wait_on_an_approval(
    tmp_path: Path, world: tuple[str, str]
) -> None:
    profile, scenario = world
    settings = make_settings(tmp_path)
    settings.ensure_home()
    async with Store.open(settings.db_path) as store:
        runner = build_runner(store, settings)
        try:
            session = await runner.start(AgentSpec(prompt="x", scenario=scenario, profile=profile))

            async def waiting() -> bool:
                return session.agent.state is AgentState.AWAITING_PERMISSION

            await eventually(waiting, timeout=90, what="the approval wait")
            tree = procs.process_tree(session.pid or 0)
            started = time.monotonic()
            await runner.stop_now("stopped: a test")
            # One grace (1 s here) for SIGTERM, with room for a loaded machine.
            assert time.monotonic() - started < settings.stop_grace_seconds + 5
            assert session.finished.is_set()
            assert procs.alive(tree) == []
            agent = await store.get_agent(session.agent.id)
            assert agent.state is AgentState.INTERRUPTED
            assert agent.last_error == "stopped: a test"
            with pytest.raises(Exception, match="stopping"):
                await runner.start(AgentSpec(prompt="y", scenario="chat"))
        finally:
            await runner.shutdown()


@hangs_up
def test_a_supervisor_under_nohup_keeps_ignoring_hang_ups() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert procs.stop_signals() == (signal.SIGTERM,)
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert procs.stop_signals() == (signal.SIGTERM, signal.SIGHUP)


@pytest.fixture
def silent_claude() -> Iterator[Path]:
    """A Claude Code that boots and never answers (a start would wait 60 s for it),
    where a sandbox sees it (not in ``/tmp``, which a sandbox has its own of)."""
    base = Path(tempfile.mkdtemp(prefix="agentdeck-silent-", dir="/var/tmp"))
    script = base / "claude"
    script.write_text("#!/bin/sh\nexec sleep 120\n")
    script.chmod(0o755)
    base.chmod(0o755)
    try:
        yield script
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_sigterm_while_claude_code_boots_leaves_nothing(
    tmp_path: Path, world: tuple[str, str], tree: Tree, silent_claude: Path
) -> None:
    env = tree.env(deck_env(tmp_path, AGENTDECK_CLAUDE_CLI_PATH=str(silent_claude)))
    run = spawn(env, *run_args(world))
    try:

        async def booting() -> bool:
            found = procs.alive(tree.note(run.pid))
            return any("sleep 120" in " ".join(p.cmdline()) for p in found)

        await eventually(booting, timeout=60, what="Claude Code booting in its sandbox")
        assert any(n.startswith(("bwrap", "/usr/bin/bwrap")) for n in tree.names())
        run.send_signal(signal.SIGTERM)
        assert finish(run) == 128 + signal.SIGTERM
        await tree.gone(timeout=AT_EXIT)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert private_dirs(run.pid) == []
    db = tmp_path / "home" / "agentdeck.db"
    if db.exists():
        async with Store.open(db) as store:
            assert not [a for a in await store.list_agents() if a.state.is_live]


async def test_a_stop_signal_before_the_runner_cancels_what_was_begun() -> None:
    began = asyncio.Event()
    cancelled: list[bool] = []
    before = signal.getsignal(signal.SIGTERM)

    async def work(ending: Ending) -> int:
        began.set()
        os.kill(os.getpid(), signal.SIGTERM)  # to this process: the handler takes it
        try:
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 0

    assert await watch("run", work) == 128 + signal.SIGTERM
    assert began.is_set() and cancelled == [True]
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is gone again


async def test_an_agent_that_ends_leaves_nothing_behind(
    tmp_path: Path, world: tuple[str, str], tree: Tree, store: Store
) -> None:
    """Approved, its turn ends: the process the model left in the background, which
    keeps the sandbox's init alive (and with it Claude Code's output open, so the
    run would never see its end), is stopped, and the run ends."""
    env = tree.env(deck_env(tmp_path))
    run = spawn(env, *run_args(world))
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        clean = {k: v for k, v in env.items() if k != MARK}
        (pending,) = deck(clean, "approvals", "--json").json()
        assert deck(clean, "approve", pending["id"]).code == 0
        assert finish(run) == 0
        await tree.gone(timeout=AT_EXIT)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert private_dirs(run.pid) == []
    assert (await store.get_agent(agent.id)).state is AgentState.DONE


async def test_a_signalled_resume_leaves_nothing(
    tmp_path: Path, world: tuple[str, str], tree: Tree, store: Store
) -> None:
    """``agentdeck resume`` (and ``send`` to a finished agent) supervise the agent
    they resume as a run does, and end as it does."""
    env = tree.env(deck_env(tmp_path))
    run = spawn(env, *run_args(world))
    started = [run]
    try:
        agent = await awaiting_approval(store, tree, run.pid)
        run.send_signal(signal.SIGTERM)
        assert finish(run) == 128 + signal.SIGTERM
        resumed = spawn(env, "resume", agent.id, "go on")
        started.append(resumed)

        async def live_again() -> bool:
            row = await store.get_agent(agent.id)
            return row.owner_pid == resumed.pid and row.state in {
                AgentState.RUNNING,
                AgentState.AWAITING_PERMISSION,
            }

        await eventually(live_again, timeout=60, what="the agent resumed")
        assert tree.note(resumed.pid)
        resumed.send_signal(signal.SIGTERM)
        assert finish(resumed) == 128 + signal.SIGTERM
        await tree.gone(timeout=AT_EXIT)
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert private_dirs(resumed.pid) == []
    stopped = await store.get_agent(agent.id)
    assert stopped.state is AgentState.INTERRUPTED
    assert stopped.last_error == "stopped: agentdeck resume got SIGTERM"


async def test_what_carries_an_agent_is_found_wherever_it_was_re_parented() -> None:
    agent_id = f"a-{uuid.uuid4().hex}"
    env = {**os.environ, procs.AGENT_ENV: agent_id}
    # The shell leaves at once: its background child, in a session of its own,
    # is re-parented, out of every tree that leads from here.
    shell = spawn_plain(["sh", "-c", "setsid sleep 1718 > /dev/null 2>&1 &"], env)
    try:
        assert shell.wait(timeout=10) == 0

        async def sleeping() -> list[int]:
            found = procs.carrying(agent_id)
            cmds = [" ".join(psutil.Process(p).cmdline()) for p in found]
            return found if cmds == ["sleep 1718"] else []

        (pid,) = await eventually(sleeping, timeout=10, what="the background sleep")
        assert pid not in [p.pid for p in procs.process_tree(os.getpid())]
        assert procs.end_carrying(agent_id, grace=1.0) == [pid]
        assert procs.wait_gone([pid], 5) == []
        assert procs.carrying(agent_id) == []
    finally:
        for pid in procs.carrying(agent_id):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def spawn_plain(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)


def test_an_agentdeck_an_agent_started_never_stops_itself() -> None:
    """An agentdeck run from an agent's tool carries that agent's id too."""
    agent_id = f"a-{uuid.uuid4().hex}"
    code = (
        "import subprocess, sys; from agentdeck.runner import procs; "
        "child = subprocess.Popen(['sleep', '30']); "
        f"found = procs.carrying('{agent_id}'); child.kill(); child.wait(); "
        "print(found == [child.pid])"
    )
    env = {**os.environ, procs.AGENT_ENV: agent_id}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30
    )
    assert out.stdout.strip() == "True", out.stderr
