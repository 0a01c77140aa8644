"""What the sandbox costs: a whole agent run, and each command.

    .venv/bin/python benchmarks/sandbox.py [--runs 8] [--commands 15]

- **run**: ``agentdeck run --scenario three-turns --json`` (start, 3 model
  turns, 2 Bash round trips, exit), each a fresh process and home, under the
  shipped ``default`` profile with its sandbox ``off``, in ``process`` mode (the
  whole Claude Code process in bubblewrap, the allow-list proxy) and in ``bash``
  mode (Claude Code's own Bash sandbox). Variants alternate. Goal: process
  mode's median ≤ 1.10 x unsandboxed (bash mode is shown for comparison: its
  cost is Claude Code's).
- **per command**: one agent (in-process runner, scripted model) runs ``true``
  through Bash N times in each mode; a call's time is from its ``tool_called``
  to its ``tool_returned`` event (the CLI running the tool, the permission
  check, the hooks). Overhead: the mode's median minus off's. Goal: ≤ 20 ms in
  process mode (bash mode starts a bubblewrap sandbox per command).
- **exec floor**: ``true`` spawned directly vs inside a fresh sandbox (the
  plan an agent gets, network off and allow-list): what ``agentdeck sandbox
  run`` pays per command, for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

import yaml

from _common import clean_env, header, median
from agentdeck.core.agent import AgentSpec
from agentdeck.core.events import EventType
from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec
from agentdeck.daemon.compose import build_runner
from agentdeck.sandbox.confine import Confinement
from agentdeck.sandbox.support import support
from agentdeck.settings import Settings
from agentdeck.store.store import Store

MODES = ("off", "process", "bash")
GOAL_RATIO = 1.10
GOAL_COMMAND_MS = 20.0


def profiles(tmp: Path) -> dict[str, Path]:
    """The shipped default profile, with its sandbox off, process or bash."""
    shipped = resources.files("agentdeck.governance").joinpath("profiles", "default.yaml")
    base = yaml.safe_load(shipped.read_text(encoding="utf-8"))
    made = {}
    for mode in MODES:
        data = dict(base, name=f"default-{mode}")
        data["sandbox"] = {**base.get("sandbox", {}), "mode": mode, "required": mode != "off"}
        path = tmp / f"default-{mode}.yaml"
        path.write_text(yaml.safe_dump(data))
        made[mode] = path
    return made


def one_run(tmp: Path, profile: Path) -> float:
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=tmp))
    env = clean_env(
        AGENTDECK_HOME=str(run_dir / "home"),
        AGENTDECK_CLAUDE_CONFIG_DIR=str(run_dir / "claude-config"),
    )
    argv = [sys.executable, "-m", "agentdeck", "run", "--scenario", "three-turns"]
    argv += ["--profile", str(profile), "--json", "Count to three, using the shell."]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    wall = time.perf_counter() - started
    try:
        agent = json.loads(done.stdout)["agent"]
    except (ValueError, KeyError):
        agent = {}
    if done.returncode != 0 or agent.get("state") != "done":
        sys.exit(f"a run failed ({profile.name}): exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def per_command(tmp: Path, mode: str, commands: int) -> list[float]:
    """Seconds each ``true`` took through Bash, in one agent."""
    scenario = tmp / f"commands-{mode}.yaml"
    call = {"tool_use": {"name": "Bash", "input": {"command": "true"}}}
    turns = [{"reply": [call]} for _ in range(commands)] + [{"reply": [{"text": "done"}]}]
    scenario.write_text(yaml.safe_dump({"name": f"commands-{mode}", "turns": turns}))
    profile = tmp / f"allow-{mode}.yaml"
    profile.write_text(
        yaml.safe_dump(
            {"name": f"allow-{mode}", "default": "allow", "sandbox": {"mode": mode}}
            if mode != "off"
            else {"name": "allow-off", "default": "allow"}
        )
    )
    home = Path(tempfile.mkdtemp(prefix=f"cmd-{mode}-", dir=tmp))
    settings = Settings(home=home / "home", claude_config_dir=home / "claude-config")

    async def go() -> list[float]:
        settings.ensure_home()
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        try:
            spec = AgentSpec(prompt="go", scenario=str(scenario), profile=str(profile))
            session = await runner.start(spec)
            await session.wait_finished(timeout=300)
            events = await store.read(agent_id=session.agent.id)
        finally:
            await runner.shutdown()
            await store.close()
        called = {e.data["tool_use_id"]: e.ts for e in events if e.type == EventType.TOOL_CALLED}
        return [
            e.ts - called[e.data["tool_use_id"]]
            for e in events
            if e.type == EventType.TOOL_RETURNED and e.data["tool_use_id"] in called
        ]

    return asyncio.run(go())


def exec_floor(tmp: Path, runs: int) -> dict[str, float]:
    """Median seconds to run ``true``: directly, and in a fresh sandbox."""
    workspace = tmp / "ws"
    workspace.mkdir(exist_ok=True)
    settings = Settings(home=tmp / "floor-home", claude_config_dir=tmp / "floor-config")

    async def go() -> dict[str, float]:
        out: dict[str, float] = {}
        variants = {
            "direct": None,
            "bwrap, network off": NetworkMode.OFF,
            "bwrap, allow-list (relay)": NetworkMode.ALLOWLIST,
        }
        for name, network in variants.items():
            argv = ["/bin/true"]
            confinement = None
            if network is not None:
                spec = SandboxSpec(mode=SandboxMode.PROCESS, network=network)
                confinement = await Confinement.open(
                    spec, workspace=workspace, settings=settings, endpoint=None,
                    on_blocked=lambda *_: None,
                )  # fmt: skip
                argv = confinement.command(argv)
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                proc = await asyncio.create_subprocess_exec(*argv)
                await proc.wait()
                times.append(time.perf_counter() - started)
            if confinement is not None:
                await confinement.close()
            out[name] = median(times)
        return out

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=8, help="runs of each variant")
    parser.add_argument("--commands", type=int, default=15, help="Bash calls per agent")
    args = parser.parse_args()
    for mode in (SandboxMode.PROCESS, SandboxMode.BASH):
        found = support(mode)
        if not found.ok:
            sys.exit(f"{mode} sandbox unavailable here: {found.detail}")
    header("sandbox: an agent run and a command, sandboxed vs not")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as name:
        tmp = Path(name)
        made = profiles(tmp)
        one_run(tmp, made["off"])  # warm caches (bytecode, the CLI binary)
        walls: dict[str, list[float]] = {m: [] for m in MODES}
        for _ in range(args.runs):
            for mode in MODES:
                walls[mode].append(one_run(tmp, made[mode]))
        print(f"\n  agentdeck run, three-turns ({args.runs} runs each, alternating):")
        base = median(walls["off"])
        for mode in MODES:
            m = median(walls[mode])
            print(
                f"    {mode:8} median {m * 1000:7.0f} ms  (min {min(walls[mode]) * 1000:.0f}, "
                f"max {max(walls[mode]) * 1000:.0f})  ratio {m / base:.3f}"
            )
        ratio = median(walls["process"]) / base
        verdict = "met" if ratio <= GOAL_RATIO else "NOT met"
        print(f"    goal ≤ {GOAL_RATIO:.2f}x unsandboxed, process mode: {verdict} ({ratio:.3f})")

        per = {mode: per_command(tmp, mode, args.commands) for mode in MODES}
        per_off = median(per["off"])
        print(f"\n  a Bash `true` in an agent ({args.commands} calls each), called → returned:")
        for mode in MODES:
            m = median(per[mode])
            print(
                f"    {mode:8} median {m * 1000:6.1f} ms  overhead {(m - per_off) * 1000:+6.1f} ms"
            )
        extra = (median(per["process"]) - per_off) * 1000
        verdict = "met" if extra <= GOAL_COMMAND_MS else "NOT met"
        goal = f"goal ≤ {GOAL_COMMAND_MS:.0f} ms per command, process mode"
        print(f"    {goal}: {verdict} ({extra:+.1f})")
        print("    (bash mode is Claude Code's own sandbox: it starts one per command)")

        floor = exec_floor(tmp, 30)
        print("\n  spawning `true` (30 each): what `agentdeck sandbox run` pays per command")
        for name, seconds in floor.items():
            print(f"    {name:26} median {seconds * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
