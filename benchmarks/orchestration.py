"""An orchestrator fanning out to N workers on the scripted model.

    .venv/bin/python benchmarks/orchestration.py [--workers 10] [--rounds 3]

What it measures, per round, with the deck (store, runner, orchestration) in
this process and the scripted model in a process of its own (its clock stamps
each request as it arrives; ``GET /_mock/requests`` gives the log):

- **spawn → first request**: from the moment ``spawn_agent`` is called (the
  deck's handler is entered) to that worker's first model request. Compared
  with bare ``claude -p`` processes started the same way in the same run: one at
  a time (an idle machine), and N at once (the load a fan-out makes). The goal:
  within 100 ms of the bare start under the same load.
- **last finish → wait returns**: from the moment the last worker's turn ended
  (its state became ``idle`` in the log) to ``wait_for_agents`` returning to the
  orchestrator (the deck's handler returning). The goal: at most 100 ms.
- **the deck's RSS**: this process, before and at its peak during the round;
  and the Claude Code processes', for scale.

Rounds alternate with the bare runs so drift on a shared machine hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

from _common import (
    MIB,
    RssSampler,
    bundled_cli,
    clean_env,
    header,
    median,
    model_process,
    percentile,
)
from agentdeck.core.agent import AgentSpec
from agentdeck.core.templates import apply_template
from agentdeck.daemon.compose import build_orchestration, build_runner
from agentdeck.orchestration.templates import resolve
from agentdeck.settings import Settings
from agentdeck.store.store import Store

GOAL_SPAWN_MS = 100.0
GOAL_WAKE_MS = 100.0
ROUND_TIMEOUT = 300.0


def scenario(workers: int) -> dict[str, Any]:
    names = [f"w{i}" for i in range(workers)]
    spawns = [
        {
            "tool_use": {
                "name": "mcp__deck__spawn_agent",
                "input": {"prompt": f"WORKER-{name}: say done", "name": name},
            }
        }
        for name in names
    ]
    wait = {"tool_use": {"name": "mcp__deck__wait_for_agents", "input": {"agents": names}}}
    return {
        "name": "fanout",
        "turns": [
            {"reply": spawns},
            {"reply": [wait]},
            {
                "when": {"tool_result_matches": "woken|still waiting"},
                "repeat": True,
                "reply": [wait],
            },
            {"when": {"tool_result_contains": "wait_for_agents: done"}, "reply": [{"text": "ALL"}]},
        ],
        "conversations": [
            {
                "when": {"first_user_text_contains": "WORKER-"},
                "turns": [{"reply": [{"text": "done"}]}],
            },
            {"when": {"first_user_text_contains": "BARE-"}, "turns": [{"reply": [{"text": "ok"}]}]},
        ],
    }


def first_requests(url: str, marker: str, since: float = 0.0) -> dict[str, float]:
    """The arrival time of each conversation's first request (at or after
    ``since``), by the text after ``marker`` in its first user message."""
    base = url.split("/s/")[0]
    log = httpx.get(f"{base}/_mock/requests", timeout=30).json()
    seen: dict[str, float] = {}
    for item in log:
        body = item.get("body") or {}
        messages = body.get("messages") if isinstance(body, dict) else None
        if not messages:
            continue
        content = messages[0].get("content")
        text = (
            content
            if isinstance(content, str)
            else " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        )
        found = re.search(re.escape(marker) + r"([\w-]+)", text)
        if found and found.group(1) not in seen and float(item["time"]) >= since:
            seen[found.group(1)] = float(item["time"])
    return seen


def bare_starts(url: str, count: int, tag: str, tmp: Path) -> list[tuple[str, float]]:
    """``count`` bare ``claude -p`` processes started at once; (tag, spawn time)."""
    started = []
    procs = []
    for i in range(count):
        home = tmp / f"bare-{tag}-{i}"
        home.mkdir()
        env = clean_env(
            HOME=str(home),
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY="sk-bench",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            CLAUDE_CODE_MAX_RETRIES="1",
            IS_SANDBOX="1",
        )
        key = f"{tag}-{i}"
        t0 = time.time()
        procs.append(
            subprocess.Popen(
                [str(bundled_cli()), "-p", f"BARE-{key}: say ok", "--output-format", "json"],
                cwd=home,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
        )
        started.append((key, t0))
    for proc in procs:
        proc.wait(timeout=ROUND_TIMEOUT)
    return started


async def fan_out(url: str, path: Path, tmp: Path, workers: int) -> dict[str, Any]:
    settings = Settings(
        home=tmp / "home",
        claude_config_dir=tmp / "claude-config",
        anthropic_base_url=url,
        anthropic_api_key="sk-bench",
        max_retries=1,
        max_children=max(8, workers),
        max_live_agents=max(32, workers + 4),
    )
    settings.ensure_home()
    store = Store.open(settings.db_path, batch_size=settings.event_batch_size)
    runner = build_runner(store, settings)
    orch = build_orchestration(store, runner, settings)
    spawn_calls: dict[str, float] = {}
    wait_returns: list[float] = []
    spawn, wait = orch.spawn, orch.waits.wait

    async def timed_spawn(parent_id: str, prompt: str, **kw: Any) -> Any:
        spawn_calls[str(kw.get("name"))] = time.time()
        return await spawn(parent_id, prompt, **kw)

    async def timed_wait(*args: Any, **kw: Any) -> str:
        text = await wait(*args, **kw)
        wait_returns.append(time.time())
        return text

    orch.spawn = timed_spawn
    orch.waits.wait = timed_wait
    before = psutil.Process().memory_info().rss
    started = time.time()
    try:
        with RssSampler() as peak:
            lead_spec = apply_template(
                resolve(settings, "orchestrator"), AgentSpec(prompt="fan out", name="lead")
            )
            session = await runner.start(lead_spec, keep_alive=True)
            lead = session.agent.id
            deadline = time.monotonic() + ROUND_TIMEOUT
            while session.agent.extra.get("last_result") != "ALL":
                if time.monotonic() > deadline or session.finished.is_set():
                    raise RuntimeError(f"the orchestrator did not finish: {session.agent}")
                await asyncio.sleep(0.05)
        children = await orch.children(lead)
        idle_at = {}
        for child in children:
            events = await store.read(agent_id=child.id, types=["state_changed"])
            idle_at[child.name] = min(e.ts for e in events if e.data.get("new") == "idle")
        requests = first_requests(url, "WORKER-", since=started)
        spawn_ms = [(requests[n] - spawn_calls[n]) * 1000 for n in spawn_calls]
        last_idle = max(idle_at.values())
        wake_ms = (min(t for t in wait_returns if t >= last_idle) - last_idle) * 1000
        return {
            "spawn_ms": spawn_ms,
            "wake_ms": wake_ms,
            "rss_before": before,
            "rss_peak": peak.peak_self,
            "claude_peak": peak.peak_children,
            "workers": len(children),
        }
    finally:
        await runner.shutdown()
        orch.close()
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    header(f"orchestration: one orchestrator, {args.workers} workers, {args.rounds} rounds")
    results: list[dict[str, Any]] = []
    bare_one: list[float] = []
    bare_many: list[float] = []
    with tempfile.TemporaryDirectory(prefix="agentdeck-bench-") as tmp_name:
        tmp = Path(tmp_name)
        path = tmp / "fanout.yaml"
        path.write_text(yaml.safe_dump(scenario(args.workers)))
        with model_process(str(path), tmp, name="fanout") as url:
            for round_no in range(args.rounds):
                work = tmp / f"round-{round_no}"
                work.mkdir()
                one = bare_starts(url, 1, f"one{round_no}", work)
                many = bare_starts(url, args.workers, f"many{round_no}", work)
                results.append(asyncio.run(fan_out(url, path, work, args.workers)))
                arrived = first_requests(url, "BARE-")
                bare_one += [(arrived[k] - t0) * 1000 for k, t0 in one]
                bare_many += [(arrived[k] - t0) * 1000 for k, t0 in many]
                last = results[-1]
                print(
                    f"  round {round_no + 1}: spawn→request median "
                    f"{median(last['spawn_ms']):.0f} ms, wake {last['wake_ms']:.0f} ms"
                )
    spawn_ms = [v for r in results for v in r["spawn_ms"]]
    wake_ms = [r["wake_ms"] for r in results]
    print()
    print(f"  spawn_agent → worker's first model request ({len(spawn_ms)} workers)")
    print(
        f"    deck, {args.workers} at once:   median {median(spawn_ms):6.0f} ms  "
        f"p90 {percentile(spawn_ms, 90):6.0f} ms"
    )
    print(
        f"    bare claude -p, {args.workers} at once: median {median(bare_many):6.0f} ms  "
        f"p90 {percentile(bare_many, 90):6.0f} ms"
    )
    print(f"    bare claude -p, alone:      median {median(bare_one):6.0f} ms")
    gap = median(spawn_ms) - median(bare_many)
    verdict = "met" if gap <= GOAL_SPAWN_MS else "NOT met"
    print(f"    deck - bare (same load): {gap:+.0f} ms (goal ≤ {GOAL_SPAWN_MS:.0f} ms: {verdict})")
    print("  last worker idle → wait_for_agents returns")
    verdict = "met" if max(wake_ms) <= GOAL_WAKE_MS else "NOT met"
    print(
        f"    {', '.join(f'{v:.1f}' for v in wake_ms)} ms (goal ≤ {GOAL_WAKE_MS:.0f} ms: {verdict})"
    )
    print("  RSS")
    print(
        f"    the deck (this process): {median([r['rss_before'] for r in results]) / MIB:.0f} MiB "
        f"before, peak {max(r['rss_peak'] for r in results) / MIB:.0f} MiB"
    )
    claude_peak = max(r["claude_peak"] for r in results) / MIB
    print(
        f"    its Claude Code processes (and the scripted model's) at peak: {claude_peak:.0f} MiB "
        f"({args.workers + 1} processes)"
    )
    print(
        json.dumps(
            {
                "spawn_ms": spawn_ms,
                "bare_many_ms": bare_many,
                "bare_one_ms": bare_one,
                "wake_ms": wake_ms,
            },
            separators=(",", ":"),
        ),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
