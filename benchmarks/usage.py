"""The usage query (``store.usage``) over a log of 100,000 per-turn costs.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/usage.py \
        [--costs 100000] [--other 300000]

Builds a fresh database (the schema ``Store.open`` migrates) holding ``--costs``
``cost_updated`` events (turns) of 1,000 agents of 20 users, 50 projects and 10
templates, each agent working up to two hours somewhere in 30 days, among
``--other`` events of other types (text, tool calls: what a log mostly holds),
bulk-loaded through sqlite3, the hourly rollup filled as migration 0006 does. Then times, 20
runs each, what the Usage page, ``GET /api/usage`` and the runner ask:
cost per day by project (30 days), per hour by user (7 days), the whole window
ungrouped, one user's spend today (a budget's seed); and what keeping the
rollup costs the writer. Goal: p50 ≤ 100 ms each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from _common import header, percentile
from agentdeck.core.guardrails import day_start
from agentdeck.core.usage import Bucket, BudgetScope, UsageGroup
from agentdeck.store import Store
from agentdeck.store.usage import UsageStore

DAYS = 30
AGENTS = 1000
RUNS = 20


def build(db: Path, costs: int, other: int, now: float) -> None:
    rng = random.Random(7)
    conn = sqlite3.connect(db)
    with conn:
        rows = []
        for i in range(AGENTS):
            spec = {"prompt": "x", "owner": f"user{i % 20}", "project": f"/p/{i % 50}"}
            rows.append(
                (
                    f"a{i:05d}",
                    f"agent{i}",
                    "done",
                    "agentdeck",
                    json.dumps(spec),
                    "/w",
                    0.0,
                    0,
                    0,
                    0,
                    "{}",
                    now,
                    now,
                    f"user{i % 20}",
                    f"/p/{i % 50}",
                    f"t{i % 10}",
                )
            )
        conn.executemany(
            "INSERT INTO agents (id, name, state, source, spec, cwd, cost_usd, input_tokens,"
            " output_tokens, turns, extra, created_at, updated_at, owner, project, template)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        # Each agent works for up to two hours somewhere in the 30 days; its
        # events fall then. A log is appended in time order: ids follow times.
        starts = [now - rng.random() * DAYS * 86_400 for _ in range(AGENTS)]
        timeline = []
        for n in range(costs + other):
            agent = rng.randrange(AGENTS)
            ts = min(now, starts[agent] + rng.random() * 7200)
            timeline.append((ts, agent, n < costs))
        timeline.sort()
        events = []
        for n, (ts, agent, is_cost) in enumerate(timeline):
            agent_id = f"a{agent:05d}"
            if is_cost:
                data = {
                    "cost_usd": 1.0,
                    "input_tokens": rng.randrange(100, 20_000),
                    "output_tokens": rng.randrange(10, 2000),
                    "delta_usd": rng.random() / 10,
                }
                events.append((agent_id, "cost_updated", ts, json.dumps(data)))
            else:
                kind = rng.choice(["assistant_text", "tool_called", "tool_returned"])
                text = json.dumps({"text": "x" * rng.randrange(20, 400)})
                events.append((agent_id, kind, ts, text))
            if len(events) == 50_000 or n == len(timeline) - 1:
                conn.executemany(
                    "INSERT INTO events (agent_id, type, ts, data) VALUES (?,?,?,?)", events
                )
                events = []
        # The writer keeps the rollup as it appends; a bulk load fills it as
        # migration 0006 does for an existing log.
        conn.execute(
            "INSERT INTO usage_hours (agent_id, hour, cost_usd, input_tokens, output_tokens,"
            " results) SELECT agent_id, CAST(ts / 3600 AS INTEGER) * 3600,"
            " sum(json_extract(data, '$.delta_usd')), sum(json_extract(data, '$.input_tokens')),"
            " sum(json_extract(data, '$.output_tokens')), count(*) FROM events"
            " WHERE type = 'cost_updated' GROUP BY agent_id, CAST(ts / 3600 AS INTEGER)"
        )
    conn.close()


async def timed(label: str, fn) -> None:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        result = await fn()
        times.append((time.perf_counter() - t0) * 1000)
    what = f"{len(result)} rows" if isinstance(result, list) else f"{result:.2f} USD"
    print(
        f"  {label:<44} p50 {percentile(times, 50):7.1f} ms   max {max(times):7.1f} ms   ({what})"
    )


async def ingest(store: Store, now: float) -> None:
    """What the rollup costs the writer: 5,000 events appended 50 at a time, all
    costs or all text."""
    from agentdeck.core.events import AssistantText, CostUpdated

    for label, make in (
        (
            "cost_updated (rolled up)",
            lambda i: CostUpdated(
                agent_id=f"a{i % AGENTS:05d}",
                ts=now,
                cost_usd=1.0,
                input_tokens=100,
                output_tokens=10,
                delta_usd=0.01,
            ),
        ),
        (
            "assistant_text",
            lambda i: AssistantText(agent_id=f"a{i % AGENTS:05d}", ts=now, text="hello"),
        ),
    ):
        t0 = time.perf_counter()
        for start in range(0, 5000, 50):
            await store.append([make(i) for i in range(start, start + 50)])
        print(f"  append 5,000 {label:<26} {5000 / (time.perf_counter() - t0):9,.0f} events/s")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--costs", type=int, default=100_000)
    parser.add_argument("--other", type=int, default=300_000)
    args = parser.parse_args()
    header("usage query")
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agentdeck.db"
        store = Store.open(db)  # migrate
        await store.close()
        t0 = time.perf_counter()
        build(db, args.costs, args.other, now)
        print(
            f"  fixture: {args.costs:,} costs among {args.costs + args.other:,} events,"
            f" {AGENTS:,} agents, {DAYS} days (built in {time.perf_counter() - t0:.1f} s)"
        )
        store = Store.open(db)
        usage = UsageStore(store)
        try:
            await timed(
                "per day by project, 30 days",
                lambda: usage.points(
                    since=now - DAYS * 86_400,
                    until=now + 1,
                    bucket=Bucket.DAY,
                    by=UsageGroup.PROJECT,
                ),
            )
            await timed(
                "per hour by user, 7 days",
                lambda: usage.points(
                    since=now - 7 * 86_400, until=now + 1, bucket=Bucket.HOUR, by=UsageGroup.USER
                ),
            )
            await timed(
                "per day ungrouped, 30 days",
                lambda: usage.points(
                    since=now - DAYS * 86_400, until=now + 1, bucket=Bucket.DAY, by=UsageGroup.NONE
                ),
            )
            await timed(
                "one user's spend today (a budget's seed)",
                lambda: usage.spent(since=day_start(now), scope=BudgetScope.USER, name="user3"),
            )
            await timed(
                "the fleet's spend today (spend_since)", lambda: store.spend_since(day_start(now))
            )
            await ingest(store, now)
        finally:
            await store.close()


if __name__ == "__main__":
    asyncio.run(main())
