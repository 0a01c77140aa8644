"""Overhead of ``agentdeck run`` over the bare Claude Code CLI, same scripted run.

    .venv/bin/python benchmarks/overhead.py [--runs 10] [--scenario three-turns] [--no-cold]

Each run is a fresh process, timed from spawn to exit, with a fresh agentdeck
home / Claude config dir. The variants alternate (the order rotates each round),
so drift on a shared machine hits all of them alike:

- ``bare``: the bundled ``claude -p PROMPT --output-format stream-json --verbose
  --permission-mode acceptEdits`` against a scripted model server this process
  runs (in a thread) for the scenario;
- ``deck``: ``agentdeck run --scenario SCENARIO PROMPT --json``, which starts its
  own scripted model in-process (part of its cost);
- ``deck-url``: ``agentdeck run PROMPT --json`` pointed at this process's server
  through ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``: agentdeck's own
  overhead (interpreter, imports, store) without the scripted model start;
- ``deck-daemon``: ``agentdeck run --scenario SCENARIO PROMPT --json`` with a
  daemon running for its home (started once, before the rounds): the command
  asks the daemon to run the agent and follows its events;
- ``deck-daemon-nowarm``: the same through a second daemon without a warm pool
  (``AGENTDECK_WARM_POOL=0``): what the pool buys is the difference;
- ``deck-cold``: ``deck`` without any bytecode cache, i.e. every module compiled
  from source on each start (how the venv runs when ``PYTHONDONTWRITEBYTECODE``
  is set and the installer wrote no ``.pyc``, as ``uv sync`` does by default);
- ``deck-baseline`` (with ``--baseline-src DIR``): ``deck`` on the agentdeck of
  another checkout's ``src`` (``PYTHONPATH``; same venv otherwise), e.g.
  ``git worktree add /tmp/before main`` then ``--baseline-src /tmp/before/src``:
  a before/after in one run, the rounds alternating;
- ``sdk`` and ``sdk-governed``: the floor under an embedded run, the same run
  through the official SDK alone in a fresh interpreter (``sdk_floor.py``):
  ``ClaudeSDKClient`` as a plain SDK user writes it; then, spawned early as
  agentdeck spawns it, with what agentdeck cannot do without before the prompt
  goes out (its settings' and store's libraries, a permission callback, hooks, an
  in-process MCP server), all answering at once.

``deck`` and ``deck-url`` get a private, warmed bytecode cache
(``PYTHONPYCACHEPREFIX``), as an installed agentdeck has after its first start.
Every run is checked: exit 0, and the final ``result`` has ``is_error`` false
(bare) or the agent ended ``done`` (agentdeck). Phases come from the bare CLI's
stream-json lines as they arrive and from the event timestamps agentdeck stored.
Goals (issue 14): through a daemon, a median ratio deck-daemon/bare of at most
1.10; embedded (``deck``), at most 1.5. Above them, an import-time profile of one
``deck`` run says where the time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _common import bundled_cli, bytecode_cached, clean_env, header, median
from agentdeck.mockmodel import MockModel, builtin_scenario_path, load_scenario

PROMPT = "Say one, then two, then summarise."
GOAL_RATIO = 1.10  # through a daemon
GOAL_EMBEDDED = 1.5
RUN_TIMEOUT = 120.0
LABELS = {
    "bare": "bare claude -p",
    "deck": "agentdeck run --scenario",
    "deck-url": "agentdeck run (ANTHROPIC_BASE_URL)",
    "deck-daemon": "agentdeck run --scenario, via a daemon",
    "deck-daemon-nowarm": "... via a daemon, AGENTDECK_WARM_POOL=0",
    "deck-cold": "agentdeck run --scenario, no .pyc",
    "deck-baseline": "... on --baseline-src",
    "sdk": "the SDK alone (sdk_floor.py)",
    "sdk-governed": "... early spawn, callbacks, libs",
}


class RunFailed(RuntimeError):
    pass


@dataclass
class Run:
    wall: float
    # Seconds from spawn at which each phase ended (see PHASES).
    phases: dict[str, float] = field(default_factory=dict)
    warm: bool = False  # agentdeck: its agent ran on a process started ahead (early or pooled)


@dataclass
class Bench:
    tmp: Path
    url: str
    scenario: str
    pycache: Path
    baseline_src: Path | None = None

    def fresh_dir(self, kind: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=self.tmp))

    def model_env(self, run_dir: Path, **extra: str) -> dict[str, str]:
        """A clean environment pointed at this process's scripted model, with a
        Claude Code config dir of the run's own."""
        return clean_env(
            ANTHROPIC_BASE_URL=self.url,
            ANTHROPIC_API_KEY="sk-bench",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
            **extra,
        )

    # -- the bare CLI ------------------------------------------------------------

    def bare(self) -> Run:
        run_dir = self.fresh_dir("bare")
        (run_dir / "work").mkdir()
        env = self.model_env(run_dir)
        argv = [
            str(bundled_cli()),
            "-p",
            PROMPT,
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
        ]
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            cwd=run_dir / "work",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        phases: dict[str, float] = {}
        lines: list[dict[str, object]] = []
        try:
            assert proc.stdout is not None
            for raw in iter(proc.stdout.readline, ""):
                if not raw.strip():
                    continue
                line = json.loads(raw)
                lines.append(line)
                at = time.perf_counter() - started
                phases.setdefault("cli_ready", at)  # the system/init line
                if line.get("type") == "result":
                    phases["result"] = at
            proc.wait(RUN_TIMEOUT)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        wall = time.perf_counter() - started
        phases["exit"] = wall
        err = proc.stderr.read() if proc.stderr else ""
        results = [line for line in lines if line.get("type") == "result"]
        if proc.returncode != 0 or not results or results[-1].get("is_error") is not False:
            last = results[-1] if results else None
            raise RunFailed(f"bare CLI: exit {proc.returncode}, result {last}\n{err[-2000:]}")
        return Run(wall, phases)

    # -- the SDK alone (the floor under an embedded run) ---------------------------

    def sdk(self, *, governed: bool) -> Run:
        run_dir = self.fresh_dir("sdk")
        (run_dir / "work").mkdir()
        env = self.model_env(run_dir, PYTHONPYCACHEPREFIX=str(self.pycache))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        script = Path(__file__).with_name("sdk_floor.py")
        argv = [sys.executable, str(script), *(["--governed"] if governed else []), PROMPT]
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                argv, cwd=run_dir / "work", env=env, stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=RUN_TIMEOUT,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"sdk_floor.py timed out after {RUN_TIMEOUT}s") from exc
        wall = time.perf_counter() - started
        calls = proc.stdout.splitlines()
        if proc.returncode != 0 or (governed and calls.count("hook PreToolUse") != 2):
            raise RunFailed(
                f"sdk_floor.py: exit {proc.returncode}, callbacks {calls}\n{proc.stderr[-2000:]}"
            )
        return Run(wall, {"exit": wall})

    # -- agentdeck ---------------------------------------------------------------

    def deck(
        self,
        *,
        scenario: bool = True,
        cold: bool = False,
        home: Path | None = None,
        baseline: bool = False,
    ) -> Run:
        run_dir = self.fresh_dir("deck")
        home = home or run_dir / "home"
        env = clean_env(
            AGENTDECK_HOME=str(home),
            AGENTDECK_CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if baseline:
            assert self.baseline_src is not None
            env["PYTHONPATH"] = str(self.baseline_src)
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache.with_name("pycache-baseline"))
        elif cold:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = str(run_dir / "no-pycache")  # empty: compile all
        else:
            env["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        args = ["run", PROMPT, "--json"]
        if scenario:
            args[1:1] = ["--scenario", self.scenario]
        else:
            env.update(
                ANTHROPIC_BASE_URL=self.url,
                ANTHROPIC_API_KEY="sk-bench",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            )
        spawned_at = time.time()
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "agentdeck", *args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"agentdeck run timed out after {RUN_TIMEOUT}s") from exc
        wall = time.perf_counter() - started
        try:
            agent = json.loads(proc.stdout)["agent"]
            state, agent_id = agent["state"], agent["id"]
            warm = agent.get("extra", {}).get("warm") is True
        except (ValueError, KeyError, TypeError, AttributeError):
            state = agent_id = None
            warm = False
        if proc.returncode != 0 or state != "done":
            raise RunFailed(
                f"agentdeck run: exit {proc.returncode}, state {state}\n"
                f"{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}"
            )
        phases = deck_phases(home / "agentdeck.db", spawned_at, agent_id)
        phases["exit"] = wall
        return Run(wall, phases, warm=warm)


def start_daemon(home: Path, warm_pool: int = 1) -> None:
    env = clean_env(
        AGENTDECK_HOME=str(home), AGENTDECK_PORT="0", AGENTDECK_WARM_POOL=str(warm_pool)
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


def print_warm_cost(home: Path) -> None:
    """What the daemon's idle warm process costs: its memory, the CPU its boot
    took, and its CPU while it waits (2 s windows, once its boot has settled)."""
    import psutil

    pid = int(json.loads((home / "daemon.json").read_text())["pid"])
    daemon = psutil.Process(pid)
    deadline = time.monotonic() + 60
    warm: list[psutil.Process] = []
    while not warm and time.monotonic() < deadline:
        warm = [p for p in daemon.children() if "claude" in " ".join(p.cmdline()).lower()]
        time.sleep(0.2)
    if not warm:
        print("\n  warm pool: no idle warm Claude Code found under the daemon")
        return

    def cpu() -> float:
        procs = [q for p in warm for q in [p, *p.children(recursive=True)]]
        return sum(sum(q.cpu_times()[:2]) for q in procs)

    idle = 1.0
    while idle > 0.02 and time.monotonic() < deadline:  # still booting
        before = cpu()
        time.sleep(2.0)
        idle = (cpu() - before) / 2.0
    procs = [q for p in warm for q in [p, *p.children(recursive=True)]]
    rss = sum(q.memory_info().rss for q in procs) / 2**20
    pss = sum(getattr(q.memory_full_info(), "pss", 0) for q in procs) / 2**20
    print(
        f"\n  warm pool cost: {len(warm)} idle Claude Code process(es) under the daemon: "
        f"RSS {rss:.0f} MiB (PSS {pss:.0f} MiB); its boot took {cpu():.2f} s of CPU; "
        f"idle, {idle * 100:.1f}% of a core"
    )


def deck_phases(db: Path, spawned_at: float, agent_id: str | None) -> dict[str, float]:
    """When agentdeck reached each step, in seconds from spawn (its stored event times)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT type, ts FROM events WHERE agent_id = ? ORDER BY id", (agent_id,)
        ).fetchall()
    finally:
        conn.close()
    phases: dict[str, float] = {}
    for type_, ts in rows:
        at = ts - spawned_at
        if type_ == "agent_spawned":
            phases.setdefault("agent_spawned", at)
        elif type_ == "user_message_sent":
            phases.setdefault("cli_ready", at)
        elif type_ == "turn_completed":
            phases["result"] = at
        elif type_ == "state_changed":
            phases["final_state"] = at
    return phases


# Phase name -> what ends there, in order.
PHASES = {
    "agent_spawned": "interpreter, imports, settings, store open + migrate",
    "cli_ready": "CLI up (bare: first stream-json line; deck: + model start, SDK connect)",
    "result": "the three model turns and two tool runs",
    "final_state": "CLI exited after the result (deck: stdin closed, exit awaited)",
    "exit": "process exit (deck: shutdown, store close, JSON output, interpreter exit)",
}


def import_profile(bench: Bench) -> tuple[float, list[tuple[str, float]]]:
    """``-X importtime`` of one warm ``deck`` run: total and self time per top-level package."""
    run_dir = bench.fresh_dir("importtime")
    env = clean_env(
        AGENTDECK_HOME=str(run_dir / "home"),
        AGENTDECK_CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
        PYTHONPYCACHEPREFIX=str(bench.pycache),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "agentdeck",
            "run",
            "--scenario",
            bench.scenario,
            PROMPT,
            "--json",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    per_package: dict[str, float] = defaultdict(float)
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, self_us, _, name = (part.strip() for part in line.replace(":", "|", 1).split("|"))
        per_package[name.split(".")[0]] += int(self_us) / 1e6
    total = sum(per_package.values())
    return total, sorted(per_package.items(), key=lambda kv: -kv[1])


def teardown_seconds(bench: Bench, *, freeze: bool) -> float:
    """Interpreter exit after importing what ``agentdeck run`` imports (median of 3)."""
    env = clean_env(PYTHONPYCACHEPREFIX=str(bench.pycache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = (
        "import sys, time, gc\n"
        "import agentdeck.cli.run, agentdeck.cli.steer, agentdeck.runner.runner\n"
        "import agentdeck.store.store, agentdeck.store.migrate\n"
        + ("gc.freeze()\n" if freeze else "")
        + "print(time.time(), flush=True)\n"
    )
    samples = []
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        samples.append(time.time() - float(proc.stdout))
    return median(samples)


def group(name: str) -> str:
    groups = {
        "claude_agent_sdk": "claude_agent_sdk + mcp + jsonschema",
        "mcp": "claude_agent_sdk + mcp + jsonschema",
        "mcp_types": "claude_agent_sdk + mcp + jsonschema",
        "jsonschema": "claude_agent_sdk + mcp + jsonschema",
        "jsonschema_specifications": "claude_agent_sdk + mcp + jsonschema",
        "referencing": "claude_agent_sdk + mcp + jsonschema",
        "rpds": "claude_agent_sdk + mcp + jsonschema",
        "sqlalchemy": "sqlalchemy + alembic",
        "alembic": "sqlalchemy + alembic",
        "mako": "sqlalchemy + alembic",
        "pydantic": "pydantic + pydantic_settings",
        "pydantic_core": "pydantic + pydantic_settings",
        "pydantic_settings": "pydantic + pydantic_settings",
        "typer": "typer + click + rich",
        "click": "typer + click + rich",
        "rich": "typer + click + rich",
        "pygments": "typer + click + rich",
        "uvicorn": "uvicorn + starlette (scripted model)",
        "starlette": "uvicorn + starlette (scripted model)",
        "h11": "uvicorn + starlette (scripted model)",
        "yaml": "uvicorn + starlette (scripted model)",
        "anyio": "anyio + httpx",
        "httpx": "anyio + httpx",
        "httpcore": "anyio + httpx",
        "agentdeck": "agentdeck",
    }
    return groups.get(name, "stdlib and others")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per variant")
    parser.add_argument("--scenario", default="three-turns", help="a shipped scenario name")
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the variant without bytecode cache"
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="another checkout's src directory: adds deck-baseline, agentdeck run on it",
    )
    parser.add_argument(
        "--variants",
        help="comma-separated subset to run, e.g. bare,deck,deck-baseline (default: all)",
    )
    args = parser.parse_args()
    if args.baseline_src is not None and not (args.baseline_src / "agentdeck").is_dir():
        parser.error(f"--baseline-src {args.baseline_src}: no agentdeck package there")

    header(f"overhead: agentdeck run vs the bare CLI, scenario {args.scenario}")
    print(
        f"  {args.runs} runs per variant, alternating; wall time from spawn to exit; "
        f"venv ships .pyc: {bytecode_cached()}; "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r} here"
    )
    scenario = load_scenario(builtin_scenario_path(args.scenario))
    variants = ["bare", "deck", "deck-url", "deck-daemon", "deck-daemon-nowarm"]
    variants += [] if args.no_cold else ["deck-cold"]
    variants += [] if args.baseline_src is None else ["deck-baseline"]
    variants += ["sdk", "sdk-governed"]
    if args.variants:
        wanted = args.variants.split(",")
        unknown = [v for v in wanted if v not in variants]
        if unknown or "bare" not in wanted or "deck" not in wanted:
            parser.error(
                f"--variants: {', '.join(unknown) or 'bare and deck are needed'} "
                f"(choose among {', '.join(variants)})"
            )
        variants = [v for v in variants if v in wanted]
    runs: dict[str, list[Run]] = {v: [] for v in variants}
    with (
        tempfile.TemporaryDirectory(prefix="agentdeck-overhead-") as tmp,
        MockModel([scenario]).running_in_thread() as mm,
        contextlib.ExitStack() as stack,
    ):
        bench = Bench(
            Path(tmp),
            mm.url_for(scenario.name),
            scenario.name,
            Path(tmp) / "pycache",
            args.baseline_src.resolve() if args.baseline_src else None,
        )
        daemon_home = Path(tmp) / "daemon-home"
        if "deck-daemon" in variants:
            stack.callback(stop_daemon, daemon_home)
            start_daemon(daemon_home)
        nowarm_home = Path(tmp) / "daemon-nowarm-home"
        if "deck-daemon-nowarm" in variants:
            stack.callback(stop_daemon, nowarm_home)
            start_daemon(nowarm_home, warm_pool=0)
        do: dict[str, Callable[[], Run]] = {
            "bare": bench.bare,
            "deck": bench.deck,
            "deck-url": lambda: bench.deck(scenario=False),
            "deck-daemon": lambda: bench.deck(home=daemon_home),
            "deck-daemon-nowarm": lambda: bench.deck(home=nowarm_home),
            "deck-cold": lambda: bench.deck(cold=True),
            "deck-baseline": lambda: bench.deck(baseline=True),
            "sdk": lambda: bench.sdk(governed=False),
            "sdk-governed": lambda: bench.sdk(governed=True),
        }
        print("  warm-up (not counted): one run of each variant, fills the bytecode cache")
        for v in variants:
            do[v]()
        for i in range(args.runs):
            order = variants[i % len(variants) :] + variants[: i % len(variants)]
            for v in order:
                runs[v].append(do[v]())
            print(
                f"  round {i + 1}/{args.runs}: "
                + "  ".join(f"{v} {runs[v][-1].wall:.2f}s" for v in variants),
                flush=True,
            )

        base = median([r.wall for r in runs["bare"]])
        print()
        print(f"  {'variant':<36} {'median':>7} {'min':>7} {'max':>7} {'ratio':>7}")
        for v in variants:
            walls = [r.wall for r in runs[v]]
            print(
                f"  {LABELS[v]:<36} {median(walls):>6.2f}s {min(walls):>6.2f}s "
                f"{max(walls):>6.2f}s {median(walls) / base:>6.2f}x"
            )
        ratio = median([r.wall for r in runs["deck"]]) / base
        met = ratio <= GOAL_EMBEDDED
        print()
        if "deck-daemon" in runs:
            via_daemon = median([r.wall for r in runs["deck-daemon"]]) / base
            met = met and via_daemon <= GOAL_RATIO
            print(
                f"  goal: through a daemon, median agentdeck/bare <= {GOAL_RATIO:.2f}: "
                f"{'MET' if via_daemon <= GOAL_RATIO else 'NOT MET'} ({via_daemon:.2f}x)"
            )
        without_model = (
            f"; without the scripted-model start "
            f"{median([r.wall for r in runs['deck-url']]) / base:.2f}x"
            if "deck-url" in runs
            else ""
        )
        print(
            f"  goal: embedded, median agentdeck/bare <= {GOAL_EMBEDDED:.2f}: "
            f"{'MET' if ratio <= GOAL_EMBEDDED else 'NOT MET'} ({ratio:.2f}x{without_model})"
        )
        if "sdk-governed" in runs:
            floor = median([r.wall for r in runs["sdk-governed"]])
            print(
                f"  floor: the SDK alone, spawned early, with agentdeck's libraries and callbacks, "
                f"{floor / base:.2f}x bare; 1.5x leaves agentdeck's own work "
                f"{GOAL_EMBEDDED * base - floor:+.2f}s over it"
            )

        print("\n  where the time goes: median seconds from spawn at which each phase ends")
        print(f"  {'phase':<14}" + "".join(f"{v:>14}" for v in variants) + "  ends when")
        for phase, meaning in PHASES.items():
            cells = []
            for v in variants:
                values = [r.phases[phase] for r in runs[v] if phase in r.phases]
                cells.append(f"{median(values):>13.2f}s" if values else f"{'-':>14}")
            print(f"  {phase:<14}" + "".join(cells) + f"  {meaning}")
        # Embedded, a warm start is the Claude Code spawned before the store opened
        # (cli/early.py) and adopted; through a daemon, the warm pool's.
        started_ahead = [
            f"{v} {sum(r.warm for r in runs[v])}/{len(runs[v])}"
            for v in variants
            if v.startswith("deck")
        ]
        print(f"  on a Claude Code started ahead and adopted: {', '.join(started_ahead)}")

        if "deck-daemon" in runs:
            print_warm_cost(daemon_home)

        if not met:
            total, packages = import_profile(bench)
            grouped: dict[str, float] = defaultdict(float)
            for name, seconds in packages:
                grouped[group(name)] += seconds
            print(
                f"\n  ratio above the goal. Imports of one warm `agentdeck run` "
                f"(-X importtime, self time by package; the profiler inflates them): "
                f"{total:.2f}s"
            )
            for name, seconds in sorted(grouped.items(), key=lambda kv: -kv[1]):
                print(f"    {name:<40} {seconds:>6.3f}s")
            plain = teardown_seconds(bench, freeze=False)
            frozen = teardown_seconds(bench, freeze=True)
            print(
                f"  interpreter teardown after those imports (median of 3): {plain:.2f}s; "
                f"{frozen:.2f}s after gc.freeze()"
            )


if __name__ == "__main__":
    try:
        main()
    except RunFailed as exc:
        sys.exit(f"run failed: {exc}")
