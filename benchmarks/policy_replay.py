"""``policy replay`` over 100,000 recorded tool calls.

    .venv/bin/python benchmarks/policy_replay.py [--calls 100000] [--db PATH] [--profile strict]

Builds (once; reused while the file at ``--db`` holds ``--calls`` calls) a log of
tool calls of 200 agents (under the ``default`` and ``permissive`` profiles, each
in its own workspace) through the store's own ``append`` (scrubbed as any): a mix
of Bash commands, reads, edits, writes, fetches and searches, each with its
result; 5 % denied (a ``permission_resolved``), 2 % asked (an approval request
and its answer). Then times ``governance.replay.replay`` over the whole log under
``--profile`` (the candidate), as ``agentdeck policy replay`` runs it: the log
read in pages, every call re-decided by the governor's verdict. Prints the calls
and events re-decided per second and the peak RSS (the log is streamed: memory
stays flat with its size). Goal (issue 32): ≤ 5 s for 100,000 calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from _common import header
from agentdeck.core.agent import Agent, AgentSource, AgentSpec, AgentState
from agentdeck.core.events import (
    Event,
    PermissionRequested,
    PermissionResolved,
    ToolCalled,
    ToolReturned,
)
from agentdeck.governance.profiles import load_profile
from agentdeck.governance.replay import ReplayQuery, replay
from agentdeck.settings import Settings
from agentdeck.store import Store

AGENTS = 200
BATCH = 5000
COMMANDS = [
    "git status", "git diff --stat", "ls -la", "echo building", "npm test", "pytest -q",
    "python3 scripts/gen.py --out build", "rm -rf build", "curl -s https://example.com/x",
    "cat README.md | head -20", "make lint && make test", "grep -rn TODO src", "pwd",
    "sudo apt-get install jq", "docker ps", "git log --oneline | head",
]  # fmt: skip
PATHS = ["src/app.py", "README.md", "tests/test_app.py", "docs/notes.md", "~/.ssh/id_rsa"]


def call_input(rng: random.Random, cwd: str, fresh: bool) -> tuple[str, dict[str, object]]:
    """A call; a ``fresh`` one names a file or a test nothing named before."""
    kind = rng.random()
    n = rng.randrange(10**9)
    if kind < 0.55:
        command = f"pytest -q tests/test_m{n}.py" if fresh else rng.choice(COMMANDS)
        return "Bash", {"command": command, "description": "step"}
    path = f"src/pkg/m{n}.py" if fresh else rng.choice(PATHS)
    full = path if path.startswith("~") else f"{cwd}/{path}"
    if kind < 0.75:
        return "Read", {"file_path": full}
    if kind < 0.85:
        return "Edit", {"file_path": full, "old_string": "a", "new_string": "b"}
    if kind < 0.9:
        return "Write", {"file_path": full, "content": "x = 1\n"}
    if kind < 0.95:
        return "WebFetch", {"url": "https://docs.python.org/3/", "prompt": "read"}
    return "Grep", {"pattern": "TODO", "path": cwd}


async def build(db: Path, calls: int, distinct: float) -> None:
    rng = random.Random(11)
    now = time.time()
    async with Store.open(db) as store:
        for i in range(AGENTS):
            profile = "permissive" if i % 3 == 0 else "default"
            await store.save_agent(
                Agent(
                    id=f"a{i:04d}", name=f"agent{i}", state=AgentState.DONE,
                    spec=AgentSpec(prompt="p", profile=profile), cwd=f"/w/a{i:04d}",
                    created_at=now, updated_at=now, source=AgentSource.AGENTDECK,
                )
            )  # fmt: skip
        batch: list[Event] = []
        for n in range(calls):
            agent = f"a{rng.randrange(AGENTS):04d}"
            ts = now - (calls - n) * 0.5
            use = f"toolu_{n:08d}"
            tool, tool_input = call_input(rng, f"/w/{agent}", rng.random() < distinct)
            batch.append(
                ToolCalled(agent_id=agent, ts=ts, tool_use_id=use, tool=tool, input=tool_input)
            )
            fate = rng.random()
            if fate < 0.05:
                batch.append(
                    PermissionResolved(
                        agent_id=agent, ts=ts, request_id=use, decision="deny", reason="r",
                        rule="Bash(rm:*)", by="policy",
                    )
                )  # fmt: skip
            elif fate < 0.07:
                request = f"ap{n:010x}"
                batch.append(
                    PermissionRequested(
                        agent_id=agent, ts=ts, request_id=request, tool=tool, input=tool_input
                    )
                )
                batch.append(
                    PermissionResolved(
                        agent_id=agent, ts=ts, request_id=request, decision="allow",
                        reason="ok", by="user:web",
                    )
                )  # fmt: skip
            batch.append(ToolReturned(agent_id=agent, ts=ts, tool_use_id=use, output="ok"))
            if len(batch) >= BATCH:
                await store.append(batch)
                batch = []
        if batch:
            await store.append(batch)


def distinct_calls(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT agent_id, data FROM events WHERE type = 'tool_called'")
        seen = set()
        for agent, data in rows:
            call = json.loads(data)
            seen.add((agent, call["tool"], json.dumps(call["input"], sort_keys=True)))
        return len(seen)
    finally:
        conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--profile", default="strict")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--distinct", type=float, default=0.5,
        help="the share of calls whose input is new (a file, a test never seen before)",
    )  # fmt: skip
    args = parser.parse_args()
    header(f"policy replay: {args.calls:,} recorded tool calls under {args.profile}")
    home = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    db = args.db or home / "replay.db"
    built = db.exists()
    if not built:
        began = time.perf_counter()
        await build(db, args.calls, args.distinct)
        print(f"  built {db} in {time.perf_counter() - began:.1f} s (through Store.append)")
    settings = Settings(home=home)
    candidate = load_profile(args.profile)
    proc = psutil.Process()
    before = proc.memory_info().rss
    times, cpu = [], []
    async with Store.open(db) as store:
        for _ in range(args.runs):
            began, used = time.perf_counter(), time.process_time()
            report = await replay(store, settings, candidate, ReplayQuery())
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - used)  # this process's threads: the load aside
    peak = proc.memory_info().rss
    took = statistics.median(times)
    distinct = distinct_calls(db)
    if report.calls != args.calls:
        print(f"  note: the log holds {report.calls:,} calls (built for another --calls?)")
    print(f"  calls {report.calls:,} ({report.events:,} events): changed {report.changed:,},"
          f" unchanged {report.unchanged:,}, not re-decided {report.calls - report.redecided:,};"
          f" {len(report.groups)} groups")  # fmt: skip
    print(
        f"  distinct (agent, tool, input): {distinct:,} ({distinct / report.calls:.0%} of"
        " the calls: each is judged by the engine once, repeats are remembered)"
    )
    print("  runs: " + ", ".join(f"{t:.2f} s" for t in times))
    print("  CPU of this process: " + ", ".join(f"{t:.2f} s" for t in cpu)
          + f" (median {statistics.median(cpu):.2f} s)")  # fmt: skip
    print(f"  replay (median): {took:.2f} s = {report.calls / took:,.0f} calls/s,"
          f" {report.events / took:,.0f} events/s  (goal: 100,000 calls ≤ 5 s)")  # fmt: skip
    print(f"  RSS {before / 2**20:.0f} MiB before, {peak / 2**20:.0f} MiB after")
    print("  load average at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    asyncio.run(main())
