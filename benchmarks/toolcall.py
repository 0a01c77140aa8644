"""What one tool call costs inside an agent, over the same call in bare Claude Code;
and what a checkpoint costs after a one-file change.

    .venv/bin/python benchmarks/toolcall.py [--runs 3] [--calls 20] [--files 2000]
        [--checkpoint-files 10000] [--no-daemon] [--baseline-src DIR] [--only calls|checkpoint]

**Per call.** Three scripted scenarios of ``--calls`` tool calls each, one call a
model turn, in one workspace of ``--files`` small files (sandbox off everywhere):

- ``bash``: Bash ``true`` (changes nothing: no checkpoint is due);
- ``read``: Read of a file of the workspace;
- ``write``: Write of a new file (a checkpoint before each).

Each scenario runs in three ways, alternating (the order rotates each round):

- ``bare``: the bundled ``claude -p … --output-format stream-json --verbose
  --allowedTools 'Bash(true)' Read Write`` against a scripted model this process
  runs in a thread;
- ``deck``: ``agentdeck run --cwd WS --profile P --json`` (an embedded run, a
  fresh home each time), pointed at the same model by ``ANTHROPIC_BASE_URL``; P
  is the shipped ``default`` profile with its sandbox off;
- ``daemon`` (unless ``--no-daemon``): the same command with a daemon running
  for its home (started once, with the model's URL in its environment);
- ``base`` (with ``--baseline-src DIR``): ``deck`` on another checkout's ``src``
  (``PYTHONPATH``), e.g. ``git worktree add --detach /tmp/before HEAD~3`` then
  ``--baseline-src /tmp/before/src``: a before/after in one run. The checkpoint
  half then also runs on it, in a process of its own, after this one's.

A call is measured from its ``tool_use`` to its ``tool_result``: the bare CLI's
stream-json lines as this process reads them, agentdeck's ``tool_called`` and
``tool_returned`` event times. That span holds the permission check, the
PreToolUse hook (agentdeck's policy, checkpoint and their events) and the tool
itself. A call's *cycle* is from one ``tool_use`` to the next: the span plus the
model's next turn. The first call of a run is left out of both (it pays the
first checkpoint, which hashes the whole workspace). Goal (issue 28): a call
that changes nothing (``bash``, ``read``) costs at most 5 ms more than bare.

**Hook.** What agentdeck itself adds to a call, without the CLI's noise (under
load a Bash ``true`` alone varies by hundreds of ms): the same three scenarios
run by an in-process ``Runner`` (the model in a thread), each call's time in
agentdeck's PreToolUse hook (policy, audit, checkpoint and their events), which
Claude Code waits for before it runs the tool. With ``--baseline-src``, also on
the baseline, in a process of its own.

**Checkpoint.** ``Checkpoints.snapshot`` on a workspace of
``--checkpoint-files`` files (made once, kept in ``$TMPDIR``): the first one,
then one after one file changed, ``--runs`` times 5; and, for scale, what git
itself takes for the same step on that index (``status``, ``update-index``,
``write-tree``). Goal: ≤ 20 ms after a one-file change on 10,000 files.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from _common import bundled_cli, clean_env, header, median
from agentdeck.daemon.compose import build_runner
from agentdeck.mockmodel import MockModel
from agentdeck.mockmodel.loader import load_scenario
from agentdeck.worktrees.checkpoints import Checkpoints

GOAL_EXTRA_MS = 5.0
GOAL_CHECKPOINT_MS = 20.0
RUN_TIMEOUT = 300.0
SCENARIOS = ("bash", "read", "write")
WAYS = ("bare", "deck", "daemon", "base")


class RunFailed(RuntimeError):
    pass


@dataclass
class Calls:
    """Seconds per call (use → result) and per cycle (use → next use)."""

    spans: list[float]
    cycles: list[float]


def make_workspace(root: Path, files: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        path = root / f"d{i % 50:02d}" / f"f{i:05d}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"file {i}\n" * 4)
    return root


def scenario_files(tmp: Path, workspace: Path, calls: int) -> dict[str, Path]:
    def call(kind: str, i: int) -> dict[str, object]:
        if kind == "bash":
            return {"name": "Bash", "input": {"command": "true", "description": "Nothing"}}
        if kind == "read":
            target = workspace / f"d{i % 50:02d}" / f"f{i:05d}.txt"
            return {"name": "Read", "input": {"file_path": str(target)}}
        target = workspace / "out" / f"w{i:03d}.txt"
        return {"name": "Write", "input": {"file_path": str(target), "content": f"w {i}\n"}}

    made = {}
    for kind in SCENARIOS:
        turns = [{"reply": [{"tool_use": call(kind, i)}]} for i in range(calls)]
        turns.append({"reply": [{"text": "done"}]})
        path = tmp / f"toolcall-{kind}.yaml"
        # Chosen by the prompt: one model (and one daemon) serves the three.
        match = {"first_user_text_contains": prompt(kind)}
        data = {"name": f"toolcall-{kind}", "match": match, "turns": turns}
        path.write_text(yaml.safe_dump(data))
        made[kind] = path
    return made


def prompt(kind: str) -> str:
    return f"Run the toolcall-{kind} benchmark."


def profile_file(tmp: Path, calls: int) -> Path:
    """The shipped ``default`` profile with its sandbox off, and room for ``calls``
    identical calls in a row (its budget stops an agent at 10)."""
    shipped = resources.files("agentdeck.governance").joinpath("profiles", "default.yaml")
    data = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    data["name"] = "default-off"
    data["sandbox"] = {**data.get("sandbox", {}), "mode": "off", "required": False}
    room = {"max_repeated_calls": calls + 1, "max_turns": calls + 10}
    data["budgets"] = {**data.get("budgets", {}), **room}
    path = tmp / "default-off.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def calls_of(times: list[tuple[str, str, float]]) -> Calls:
    """From ("use" | "result", tool_use_id, seconds) in arrival order."""
    used: dict[str, float] = {}
    order: list[str] = []
    spans: list[float] = []
    for kind, tool_use_id, at in times:
        if kind == "use":
            used[tool_use_id] = at
            order.append(tool_use_id)
        elif tool_use_id in used and order and tool_use_id != order[0]:
            spans.append(at - used[tool_use_id])
    starts = [used[t] for t in order]
    cycles = [b - a for a, b in itertools.pairwise(starts[1:])]
    return Calls(spans, cycles)


@dataclass
class Bench:
    tmp: Path
    workspace: Path
    mm: MockModel
    profile: Path
    daemon_home: Path | None = None

    def fresh_dir(self, kind: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=self.tmp))

    def reset_workspace(self) -> None:
        out = self.workspace / "out"
        if out.exists():
            for f in out.iterdir():
                f.unlink()
            out.rmdir()

    def bare(self, kind: str, calls: int) -> Calls:
        self.reset_workspace()
        run_dir = self.fresh_dir("bare")
        env = clean_env(
            ANTHROPIC_BASE_URL=self.mm.url,
            ANTHROPIC_API_KEY="sk-bench",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
        )
        argv = [
            str(bundled_cli()), "-p", prompt(kind), "--output-format", "stream-json", "--verbose",
            "--allowedTools", "Bash(true)", "Read", "Write",
        ]  # fmt: skip
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=self.workspace, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        times: list[tuple[str, str, float]] = []
        result: dict[str, object] | None = None
        try:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, ""):
                if not raw.strip():
                    continue
                at = time.perf_counter() - started
                line = json.loads(raw)
                content = (line.get("message") or {}).get("content") or []
                for block in content if isinstance(content, list) else []:
                    if block.get("type") == "tool_use":
                        times.append(("use", block["id"], at))
                    elif block.get("type") == "tool_result":
                        if block.get("is_error"):
                            raise RunFailed(f"bare {kind}: a call failed: {block}")
                        times.append(("result", block["tool_use_id"], at))
                if line.get("type") == "result":
                    result = line
            proc.wait(RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0 or result is None or result.get("is_error") is not False:
            err = proc.stderr.read() if proc.stderr else ""
            raise RunFailed(f"bare {kind}: exit {proc.returncode}, {result}\n{err[-2000:]}")
        return self._checked(kind, calls, calls_of(times))

    def deck(
        self, kind: str, calls: int, *, daemon: bool = False, src: Path | None = None
    ) -> Calls:
        self.reset_workspace()
        run_dir = self.fresh_dir("deck")
        home = self.daemon_home if daemon else run_dir / "home"
        assert home is not None
        env = clean_env(
            AGENTDECK_HOME=str(home),
            AGENTDECK_CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
            ANTHROPIC_BASE_URL=self.mm.url,
            ANTHROPIC_API_KEY="sk-bench",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        if src is not None:
            env["PYTHONPATH"] = str(src)
        argv = [sys.executable, "-m", "agentdeck", "run", prompt(kind), "--json"]
        argv += ["--cwd", str(self.workspace), "--profile", str(self.profile)]
        try:
            done = subprocess.run(
                argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=RUN_TIMEOUT,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"agentdeck run ({kind}) timed out") from exc
        try:
            agent = json.loads(done.stdout)["agent"]
        except (ValueError, KeyError, TypeError):
            agent = {}
        if done.returncode != 0 or agent.get("state") != "done":
            raise RunFailed(
                f"agentdeck run ({kind}): exit {done.returncode}, state {agent.get('state')}\n"
                f"{done.stdout[-1000:]}\n{done.stderr[-2000:]}"
            )
        return self._checked(kind, calls, deck_calls(home / "agentdeck.db", agent["id"]))

    @staticmethod
    def _checked(kind: str, calls: int, found: Calls) -> Calls:
        if len(found.spans) != calls - 1:
            raise RunFailed(f"{kind}: {len(found.spans) + 1} calls returned, not {calls}")
        return found


def deck_calls(db: Path, agent_id: str) -> Calls:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT type, ts, data FROM events WHERE agent_id = ? "
            "AND type IN ('tool_called', 'tool_returned') ORDER BY id",
            (agent_id,),
        ).fetchall()
    finally:
        conn.close()
    times = []
    for type_, ts, data in rows:
        info = json.loads(data)
        if type_ == "tool_returned" and info.get("is_error"):
            raise RunFailed(f"a call failed in agentdeck: {info}")
        times.append(("use" if type_ == "tool_called" else "result", info["tool_use_id"], ts))
    return calls_of(times)


def start_daemon(home: Path, url: str) -> None:
    env = clean_env(
        AGENTDECK_HOME=str(home),
        AGENTDECK_PORT="0",
        ANTHROPIC_BASE_URL=url,
        ANTHROPIC_API_KEY="sk-bench",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    subprocess.run(
        [sys.executable, "-m", "agentdeck", "up", "--detach"],
        env=env, check=True, capture_output=True, timeout=RUN_TIMEOUT,
    )  # fmt: skip


def stop_daemon(home: Path) -> None:
    env = clean_env(AGENTDECK_HOME=str(home))
    subprocess.run(
        [sys.executable, "-m", "agentdeck", "down"], env=env, capture_output=True, timeout=60
    )


# -- checkpoints ---------------------------------------------------------------------


def checkpoint_workspace(files: int) -> Path:
    """A workspace of ``files`` files of ~2 KiB, made once and kept in $TMPDIR."""
    root = Path(tempfile.gettempdir()) / f"agentdeck-bench-checkpoint-{files}"
    done = root / ".made"
    if not done.is_file():
        make_workspace(root / "ws", files)
        for path in (root / "ws").rglob("*.txt"):
            path.write_text(path.read_text() * 60)
        done.touch()
    return root / "ws"


def checkpoint_costs(tmp: Path, files: int, rounds: int) -> dict[str, list[float]]:
    workspace = checkpoint_workspace(files)
    changed = workspace / "d00" / "f00000.txt"
    original = changed.read_bytes()
    checkpoints = Checkpoints(tmp / "checkpoints")
    out: dict[str, list[float]] = {"first": [], "one file changed": [], "nothing changed": []}

    async def go() -> None:
        started = time.perf_counter()
        await checkpoints.snapshot("bench", workspace, tool="Bash", summary="first")
        out["first"].append(time.perf_counter() - started)
        try:
            for i in range(rounds):
                changed.write_bytes(original + f"change {i}\n".encode())
                started = time.perf_counter()
                await checkpoints.snapshot("bench", workspace, tool="Edit", summary="one")
                out["one file changed"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await checkpoints.snapshot("bench", workspace, tool="Edit", summary="none")
                out["nothing changed"].append(time.perf_counter() - started)
        finally:
            changed.write_bytes(original)

    asyncio.run(go())
    shadow = checkpoints.shadow("bench")
    where = [f"--git-dir={shadow}", f"--work-tree={workspace}"]

    def git_alone(*args: str) -> float:
        started = time.perf_counter()
        subprocess.run(["git", *where, *args], cwd=workspace, check=True, capture_output=True)
        return time.perf_counter() - started

    for name, args in {
        "git status --porcelain -uall": ("status", "--porcelain", "-z", "--untracked-files=all"),
        "git update-index --refresh": ("update-index", "-q", "--refresh"),
        "git write-tree": ("write-tree",),
        "git --version (a spawn)": ("--version",),
    }.items():
        out[name] = [git_alone(*args) for _ in range(rounds)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each scenario and way")
    parser.add_argument("--calls", type=int, default=20, help="tool calls per run")
    parser.add_argument("--files", type=int, default=2000, help="files in the agents' workspace")
    parser.add_argument("--checkpoint-files", type=int, default=10_000)
    parser.add_argument("--no-daemon", action="store_true", help="skip the daemon way")
    parser.add_argument(
        "--baseline-src", type=Path, help="another checkout's src: adds the way `base`"
    )
    parser.add_argument(
        "--only", choices=("calls", "hooks", "checkpoint"), help="one part of the benchmark"
    )
    args = parser.parse_args()
    if args.calls < 3:
        parser.error("--calls: at least 3")
    if args.baseline_src is not None:
        args.baseline_src = args.baseline_src.resolve()
        if not (args.baseline_src / "agentdeck").is_dir():
            parser.error(f"--baseline-src {args.baseline_src}: no agentdeck package there")
    header("toolcall: a tool call in an agent vs in bare Claude Code; a checkpoint")
    ways = [w for w in WAYS if not (args.no_daemon and w == "daemon")]
    ways = [w for w in ways if args.baseline_src is not None or w != "base"]
    with tempfile.TemporaryDirectory(prefix="agentdeck-toolcall-") as name:
        tmp = Path(name)
        if args.only in (None, "calls"):
            per_call(tmp, ways, args)
        if args.only in (None, "hooks"):
            print_hooks(tmp, args)
            if args.baseline_src is not None:
                print(f"\n  the same on --baseline-src {args.baseline_src}:", flush=True)
                print(again(args, "hooks", "in agentdeck's PreToolUse hook"))
        if args.only in (None, "checkpoint"):
            print_checkpoints(tmp, args.checkpoint_files, args.runs * 5)
            if args.baseline_src is not None:
                print(f"\n  the same on --baseline-src {args.baseline_src}:", flush=True)
                print(again(args, "checkpoint", "checkpoints on"))


def again(args: argparse.Namespace, part: str, first: str) -> str:
    """One part of this benchmark on the baseline, in a process of its own: its lines
    from the one containing ``first``."""
    argv = [sys.argv[0], "--only", part, "--runs", str(args.runs), "--calls", str(args.calls)]
    argv += ["--files", str(args.files), "--checkpoint-files", str(args.checkpoint_files)]
    env = dict(os.environ, PYTHONPATH=str(args.baseline_src))
    done = subprocess.run(
        [sys.executable, *argv], env=env, text=True, capture_output=True, check=False
    )
    lines = done.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if first in line), len(lines))
    return "\n".join(lines[start:]) or done.stderr[-2000:]


def hook_costs(tmp: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """Seconds each call spent in agentdeck's PreToolUse hook, per scenario."""
    from agentdeck.core.agent import AgentSpec
    from agentdeck.runner.session import AgentSession
    from agentdeck.settings import Settings
    from agentdeck.store.store import Store

    workspace = make_workspace(tmp / "hooks-ws", args.files)
    made = scenario_files(tmp, workspace, args.calls)
    profile = profile_file(tmp, args.calls)
    spent: list[float] = []
    pre_tool = AgentSession._pre_tool

    async def timed(self: AgentSession, *hook: Any) -> Any:
        started = time.perf_counter()
        try:
            return await pre_tool(self, *hook)
        finally:
            spent.append(time.perf_counter() - started)

    AgentSession._pre_tool = timed  # type: ignore[method-assign]
    out: dict[str, list[float]] = {kind: [] for kind in SCENARIOS}

    async def one(kind: str, url: str) -> None:
        home = Path(tempfile.mkdtemp(prefix="hooks-", dir=tmp))
        settings = Settings(
            home=home / "home", claude_config_dir=home / "claude-config",
            anthropic_base_url=url, anthropic_api_key="sk-bench",
        )  # fmt: skip
        settings.ensure_home()
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        shutil.rmtree(workspace / "out", ignore_errors=True)
        try:
            spec = AgentSpec(prompt=prompt(kind), cwd=str(workspace), profile=str(profile))
            session = await runner.start(spec)
            await session.wait_finished(timeout=RUN_TIMEOUT)
            if session.agent.state != "done":
                raise RunFailed(f"hooks {kind}: the agent ended {session.agent.state}")
        finally:
            await runner.shutdown()
            await store.close()

    scenarios = [load_scenario(made[kind]) for kind in SCENARIOS]
    with MockModel(scenarios).running_in_thread() as mm:
        for _ in range(args.runs):
            for kind in SCENARIOS:
                spent.clear()
                asyncio.run(one(kind, mm.url))
                out[kind] += spent[1:]  # the first pays the first checkpoint
    return out


def print_hooks(tmp: Path, args: argparse.Namespace) -> None:
    costs = hook_costs(tmp, args)
    print(f"\n  in agentdeck's PreToolUse hook, per call ({args.runs} runs of each), ms:")
    for kind, values in costs.items():
        ms = sorted(v * 1000 for v in values)
        print(
            f"    {kind:<6} median {median(ms):6.1f}  (p10 {ms[len(ms) // 10]:.1f}, "
            f"p90 {ms[len(ms) * 9 // 10]:.1f}, {len(ms)} calls)"
        )


def per_call(tmp: Path, ways: list[str], args: argparse.Namespace) -> None:
    workspace = make_workspace(tmp / "ws", args.files)
    made = scenario_files(tmp, workspace, args.calls)
    scenarios = [load_scenario(made[kind]) for kind in SCENARIOS]
    print(
        f"  {args.calls} calls per run, {args.runs} runs per scenario and way, alternating; "
        f"workspace of {args.files} files; sandbox off"
    )
    results: dict[tuple[str, str], list[Calls]] = {(k, w): [] for k in SCENARIOS for w in ways}
    with MockModel(scenarios).running_in_thread() as mm, contextlib.ExitStack() as stack:
        bench = Bench(tmp, workspace, mm, profile_file(tmp, args.calls))
        if "daemon" in ways:
            bench.daemon_home = tmp / "daemon-home"
            stack.callback(stop_daemon, bench.daemon_home)
            start_daemon(bench.daemon_home, mm.url)
        do: dict[str, Callable[[str], Calls]] = {
            "bare": lambda kind: bench.bare(kind, args.calls),
            "deck": lambda kind: bench.deck(kind, args.calls),
            "daemon": lambda kind: bench.deck(kind, args.calls, daemon=True),
            "base": lambda kind: bench.deck(kind, args.calls, src=args.baseline_src),
        }
        print("  warm-up (not counted): one bash run each way")
        for way in ways:
            do[way]("bash")
        pairs = [(k, w) for k in SCENARIOS for w in ways]
        for i in range(args.runs):
            order = pairs[i % len(pairs) :] + pairs[: i % len(pairs)]
            for kind, way in order:
                results[kind, way].append(do[way](kind))
            print(f"  round {i + 1}/{args.runs} done", flush=True)

    print(f"\n  per call, median ms (use → result | use → next use), {args.calls - 1} calls a run:")
    print(f"  {'scenario':<9}" + "".join(f"{w:>22}" for w in ways) + f"{'extra over bare':>22}")
    met = True
    for kind in SCENARIOS:
        cells, spans = [], {}
        for way in ways:
            spans[way] = median([s for c in results[kind, way] for s in c.spans]) * 1000
            cycle = median([s for c in results[kind, way] for s in c.cycles]) * 1000
            cells.append(f"{spans[way]:>9.1f} | {cycle:>8.1f}   ")
        extras = {w: spans[w] - spans["bare"] for w in ways if w != "bare"}
        extra = "  ".join(f"{w} {v:+.1f}" for w, v in extras.items())
        print(f"  {kind:<9}" + "".join(f"{c:>22}" for c in cells) + f"   {extra}")
        if kind != "write":
            # The baseline is the code before, for scale: the goal is this code's.
            met = met and all(v <= GOAL_EXTRA_MS for w, v in extras.items() if w != "base")
    print(
        f"\n  goal: a call that changes nothing (bash, read) costs <= {GOAL_EXTRA_MS:.0f} ms "
        f"more than bare: {'MET' if met else 'NOT MET'}"
    )


def print_checkpoints(tmp: Path, files: int, rounds: int) -> None:
    print(f"\n  checkpoints on a workspace of {files:,} files ({rounds} each, median ms):")
    costs = checkpoint_costs(tmp, files, rounds)
    for name, values in costs.items():
        low, high = min(values) * 1000, max(values) * 1000
        print(f"    {name:<32} {median(values) * 1000:>8.1f}  (min {low:.1f}, max {high:.1f})")
    one = median(costs["one file changed"]) * 1000
    verdict = "MET" if one <= GOAL_CHECKPOINT_MS else "NOT MET"
    print(f"  goal: one after a one-file change <= {GOAL_CHECKPOINT_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    try:
        main()
    except RunFailed as exc:
        sys.exit(f"run failed: {exc}")
