"""A fleet of concurrent one-shot agents against one scripted model server.

    .venv/bin/python benchmarks/fleet.py [--agents 20] [--scenario three-turns]
                                         [--deadline 600] [--model-process]

Drives ``Runner`` + ``Store`` in-process (as ``tests/runner`` does), on a fresh
home and Claude config dir. All agents are started at once (``Runner.start``
concurrently) and run the same scenario, so they share the one scripted-model
server the runner starts for it. With ``--model-process`` the scripted model runs
in a separate ``agentdeck mock-model`` process instead, so the RSS figure is
agentdeck alone, without the model server and its request log.

Reported: final states (all must be ``done``), wall time until the last agent
finished, per-agent time from the start call to finished (p50/p95), events
persisted, and peak RSS of this process (sampled every 50 ms, without the CLI
children) plus the peak total RSS of its children (sampled every 250 ms; RSS
counts shared pages once per process). Goal: at most 150 MiB for agentdeck
itself with 50 agents. Every agent is stopped at the end, also on failure or
when ``--deadline`` passes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil
from pydantic import SecretStr

from _common import MIB, RssSampler, header, median, model_process, percentile
from agentdeck.core.agent import AgentSpec
from agentdeck.daemon.compose import build_runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store

GOAL_RSS_MIB = 150
GOAL_AGENTS = 50
PROMPT = "Say one, then two, then summarise."


@dataclass
class Outcome:
    states: Counter[str]
    start_failures: list[str]
    wall: float
    to_running: list[float]
    to_done: list[float]
    events: int
    by_type: Counter[str]
    notices: Counter[str]
    notice_examples: dict[str, str]
    timed_out: bool


async def run_fleet(settings: Settings, spec: AgentSpec, agents: int, deadline: float) -> Outcome:
    settings.ensure_home()
    store = Store.open(settings.db_path, batch_size=settings.event_batch_size)
    runner = build_runner(store, settings)
    to_running: list[float] = []
    to_done: list[float] = []
    failures: list[str] = []
    timed_out = False
    started = time.perf_counter()
    try:
        async with asyncio.timeout(deadline):

            async def one() -> None:
                try:
                    session = await runner.start(spec)
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    failures.append(f"{type(exc).__name__}: {exc}")
                    return
                to_running.append(time.perf_counter() - started)
                await session.finished.wait()
                to_done.append(time.perf_counter() - started)

            async with asyncio.TaskGroup() as tg:
                for _ in range(agents):
                    tg.create_task(one())
    except TimeoutError:
        timed_out = True
    finally:
        wall = time.perf_counter() - started
        try:
            await runner.shutdown()
        finally:
            states = Counter(str(a.state) for a in await store.list_agents())
            events = await store.last_event_id()
            stored = await store.read(limit=events + 1)
            await store.close()
    by_type = Counter(e.type for e in stored)
    notices = Counter(
        f"{e.type}:{e.data.get('kind')}" for e in stored if e.type in ("notice", "error_occurred")
    )
    examples = {
        f"{e.type}:{e.data.get('kind')}": str(e.data.get("message"))[:160]
        for e in reversed(stored)
        if e.type in ("notice", "error_occurred")
    }
    return Outcome(
        states,
        failures,
        wall,
        to_running,
        to_done,
        events,
        by_type,
        notices,
        examples,
        timed_out,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--scenario", default="three-turns", help="shipped name or YAML file")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds for the fleet")
    parser.add_argument(
        "--model-process",
        action="store_true",
        help="run the scripted model in its own process (RSS without it)",
    )
    args = parser.parse_args()

    header(f"fleet: {args.agents} concurrent one-shot agents, scenario {args.scenario}")
    where = "a separate process" if args.model_process else "this process (the runner's own)"
    print(f"  one scripted model server, in {where}; deadline {args.deadline:.0f}s")
    with tempfile.TemporaryDirectory(prefix="agentdeck-fleet-") as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(home=tmp / "home", claude_config_dir=tmp / "claude-config")
        spec = AgentSpec(prompt=PROMPT, scenario=args.scenario)
        with contextlib.ExitStack() as stack:
            if args.model_process:
                url = stack.enter_context(model_process(args.scenario, tmp))
                # Settings are read from the environment only by Settings();
                # the CLI children inherit ours, like bare runs get them.
                os.environ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
                settings = settings.model_copy(
                    update={"anthropic_base_url": url, "anthropic_api_key": SecretStr("sk-bench")}
                )
                spec = AgentSpec(prompt=PROMPT)
            baseline = psutil.Process().memory_info().rss
            cpu_before = os.times()
            with RssSampler() as rss:
                outcome = asyncio.run(run_fleet(settings, spec, args.agents, args.deadline))
            cpu = os.times()

    done = outcome.states.get("done", 0)
    ok = done == args.agents and not outcome.start_failures and not outcome.timed_out
    print(
        f"  completed: {done}/{args.agents} done; final states "
        + ", ".join(f"{k}={v}" for k, v in sorted(outcome.states.items()))
        + (f"; {len(outcome.start_failures)} failed to start" if outcome.start_failures else "")
        + ("; DEADLINE PASSED" if outcome.timed_out else "")
    )
    for failure in outcome.start_failures[:5]:
        print(f"    start failure: {failure[:300]}")
    print(f"  wall time: {outcome.wall:.1f}s (start of all agents to the last finished)")
    if outcome.to_running:
        print(
            f"  time to running per agent (CLI up, prompt sent): "
            f"p50 {median(outcome.to_running):.1f}s, p95 {percentile(outcome.to_running, 95):.1f}s"
        )
    if outcome.to_done:
        print(
            f"  time to done per agent: p50 {median(outcome.to_done):.1f}s, "
            f"p95 {percentile(outcome.to_done, 95):.1f}s, max {max(outcome.to_done):.1f}s"
        )
    print(f"  events persisted: {outcome.events} ({outcome.events / args.agents:.1f} per agent)")
    print("    by type: " + ", ".join(f"{k}={v}" for k, v in sorted(outcome.by_type.items())))
    if outcome.notices:
        print(
            "    notices/errors: "
            + ", ".join(f"{k}={v}" for k, v in sorted(outcome.notices.items()))
        )
        for kind, message in sorted(outcome.notice_examples.items()):
            print(f"      e.g. {kind}: {message}")
    own_cpu = cpu.user + cpu.system - cpu_before.user - cpu_before.system
    children_cpu = (
        cpu.children_user
        + cpu.children_system
        - cpu_before.children_user
        - cpu_before.children_system
    )
    print(
        f"  CPU time: agentdeck {own_cpu:.1f}s, its (reaped) children {children_cpu:.1f}s, "
        f"over {outcome.wall:.1f}s wall on {os.cpu_count()} CPUs"
    )
    peak = rss.peak_self / MIB
    print(
        f"  peak RSS of agentdeck (this process, without children): {peak:.0f} MiB "
        f"(after imports, before the fleet: {baseline / MIB:.0f} MiB)"
    )
    print(
        f"  peak total RSS of the children: {rss.peak_children / MIB:.0f} MiB "
        f"over {rss.peak_children_count} processes"
    )
    if args.agents >= GOAL_AGENTS:
        met = peak <= GOAL_RSS_MIB
        print(
            f"  goal: agentdeck <= {GOAL_RSS_MIB} MiB at {GOAL_AGENTS} agents: "
            f"{'MET' if met else 'NOT MET'} ({peak:.0f} MiB)"
        )
    else:
        print(f"  (the RSS goal is stated for {GOAL_AGENTS} agents: --agents {GOAL_AGENTS})")
    if not ok:
        sys.exit("fleet failed: not every agent ended done")


if __name__ == "__main__":
    main()
