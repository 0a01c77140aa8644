"""``schedules.py --triggers-per-second N``: 1,000 schedules and N signed webhook
deliveries a second on one deck at once (issue 33 item 6).

The daemon's Deck in process (SQLite, agents on the scripted model), 1,000 daily
schedules on it. Phase 1 (quiet): ``--rounds`` times one schedule made due 0.5 s ahead
(the benchmark's own clock: its ``next_at`` written, the scheduler woken as add/resume
wake it), due -> agent started measured. Phase 2 (load, ``--seconds``): a task sends N
deliveries a second through ``Deck.receive_webhook`` (open loop: each its own task at
its time, as HTTP requests come), the webhooks benchmark's ~100 KB signed pull-request
payload; ``--bad-share`` carry a wrong signature (401), ``--replay-share`` repeat an
earlier delivery id the deck kept (409 replayed), the rest are fresh: the trigger's rate
(``--trigger-rate`` a minute) admits some, which start an agent (202) unless
AGENTDECK_MAX_LIVE_AGENTS (``--max-live``) is reached (409 refused), the others are
refused by the rate (429). Meanwhile a schedule comes due every ``--due-every`` s, as in
phase 1. A started trigger agent is killed once its turn is over (idle), as its work is
done: the live limit bounds what runs, not what has run.

Printed: the deliveries' achieved rate and latency p50/p99 by outcome; due -> agent
started in both phases, as the start begun (the run's recorded time) and as the agent
created (``create_agent`` returned: Claude Code spawned and connected); this process's
CPU in both phases (Claude Code's processes not counted).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from _common import header, median, percentile
from agentdeck.core.agent import AgentState
from agentdeck.core.schedules import RunOutcome, ScheduleRun
from agentdeck.core.triggers import HookAnswer, Trigger, fingerprint, sign
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.daemon.scheduler import Scheduler
from agentdeck.settings import Settings
from agentdeck.store.schedules import ScheduleStore
from agentdeck.store.triggers import TriggerStore
from schedules import _make_due, add_daily
from webhooks import BODY, SECRET

BOOTING = (AgentState.QUEUED, AgentState.STARTING, AgentState.RUNNING)


def outcome_of(answer: HookAnswer) -> str:
    if answer.status == 202:
        return "202 agent started"
    if answer.status == 401:
        return "401 bad signature"
    if answer.status == 429:
        return "429 trigger's rate limit"
    if "seen before" in answer.message:
        return "409 replayed delivery id"
    if "MAX_LIVE_AGENTS" in answer.message:
        return "409 live-agent limit"
    return f"{answer.status} {answer.message[:60]}"


KEPT = ("202 agent started", "409 live-agent limit")


class Load:
    """The delivery task's record: latencies by outcome, agents it started."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.started: list[str] = []
        self.late_sends = 0  # a delivery's task began > 50 ms after its time
        self.sent = 0
        self.elapsed = 0.0


async def deliver(
    deck: Deck, load: Load, rate: float, seconds: float, bad: float, replay: float
) -> None:
    good, wrong = sign(SECRET, BODY), sign(b"not-the-secret-0123456789", BODY)
    fresh = itertools.count()
    seen: list[str] = []
    # Deterministic mix: per 100 deliveries, bad*100 wrong signatures, replay*100 ids
    # sent before and kept (an id refused by the rate is not kept: it is no replay).
    n_bad, n_replay = round(bad * 100), round(replay * 100)

    async def one(i: int, at: float) -> None:
        slot = i % 100
        if slot < n_bad:
            signature, delivery = wrong, f"bad-{i}"
        elif slot < n_bad + n_replay and seen:
            signature, delivery = good, seen[i % len(seen)]
        else:
            signature, delivery = good, f"d-{next(fresh)}"
        if time.monotonic() - at > 0.05:
            load.late_sends += 1
        t0 = time.perf_counter()
        answer = await deck.receive_webhook(
            "pr", BODY, signature=signature, delivery=delivery, event="pull_request"
        )
        outcome = outcome_of(answer)
        load.ms[outcome].append((time.perf_counter() - t0) * 1000)
        if outcome in KEPT:  # its id is remembered: sent again, it is a replay
            seen.append(delivery)
        if answer.agent_id:
            load.started.append(answer.agent_id)

    tasks: list[asyncio.Task[None]] = []
    start = time.monotonic()
    total = int(rate * seconds)
    for i in range(total):
        at = start + i / rate
        if (wait := at - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(one(i, at)))
    await asyncio.gather(*tasks)
    load.sent = total
    load.elapsed = time.monotonic() - start


async def reap(deck: Deck, load: Load, stop: asyncio.Event) -> None:
    """Kill each trigger-started agent once its turn is over (idle)."""
    done: set[str] = set()
    deadline = float("inf")
    while not stop.is_set() or (len(done) < len(load.started) and time.monotonic() < deadline):
        if stop.is_set() and deadline == float("inf"):
            deadline = time.monotonic() + 60
        for agent_id in [a for a in load.started if a not in done]:
            agent = await deck.get_agent(agent_id)
            if agent.state in BOOTING:
                continue
            if agent.state is AgentState.IDLE:
                await deck.kill(agent_id)
            done.add(agent_id)
        await asyncio.sleep(0.2)


class Due(NamedTuple):
    run: ScheduleRun
    seen: float  # due -> its settled run seen (create_agent returned), polled every 10 ms


async def due_round(deck: Deck, store: ScheduleStore, scheduler: Scheduler, name: str) -> Due:
    await _make_due(deck, name, time.time() + 0.5)
    scheduler.poke()  # as add/resume do: the soonest due time changed
    deadline = time.monotonic() + 60
    while True:  # its claim is recorded as failed "starting" until the start settles
        runs = await store.runs(name, limit=1)
        if runs and not (runs[0].outcome is RunOutcome.FAILED and runs[0].reason == "starting"):
            return Due(runs[0], time.time() - runs[0].due_at)
        if time.monotonic() > deadline:
            raise RuntimeError(f"schedule {name} never ran")
        await asyncio.sleep(0.01)


def due_line(what: str, rounds: list[Due]) -> None:
    ok = [d for d in rounds if d.run.outcome is RunOutcome.STARTED]
    if ok:
        begun = [(d.run.at - d.run.due_at) * 1000 for d in ok]
        seen = [d.seen * 1000 for d in ok]
        print(
            f"due -> agent started, {what}: {len(ok)} of {len(rounds)} runs started; "
            f"its start begun (the run's time) p50 {median(begun):.0f} ms, p95 "
            f"{percentile(begun, 95):.0f} ms; the agent created (create_agent returned: "
            f"Claude Code spawned and connected) p50 {median(seen):.0f} ms, p95 "
            f"{percentile(seen, 95):.0f} ms, max {max(seen):.0f} ms (goal <= 1000 ms)"
        )
    else:
        print(f"due -> agent started, {what}: none of {len(rounds)} runs started")
    other = [f"{d.run.outcome}: {d.run.reason[:90]}" for d in rounds if d not in ok]
    for line in sorted(set(other)):
        print(f"  not started ({other.count(line)}): {line}")


async def main(
    count: int,
    rounds: int,
    per_second: float,
    seconds: float,
    *,
    trigger_rate: int,
    max_live: int,
    bad: float,
    replay: float,
    due_every: float,
) -> None:
    logging.getLogger("agentdeck").setLevel(logging.ERROR)  # a line per refusal otherwise
    logging.getLogger("claude_agent_sdk").setLevel(logging.CRITICAL)  # each agent killed
    header(
        f"schedules + webhooks: {count} schedules, {per_second:g} deliveries/s for "
        f"{seconds:g} s on one deck"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        secret = root / "hook.secret"
        secret.write_bytes(SECRET)
        secret.chmod(0o600)
        settings = Settings(
            home=root / "home", claude_config_dir=root / "claude", warm_pool=0,
            max_live_agents=max_live,
        )  # fmt: skip
        deck = await open_deck(settings)
        try:
            store = ScheduleStore(deck._store)
            now = time.time()
            await add_daily(store, count, root / "project", now)
            await TriggerStore(deck._store).add(
                Trigger(
                    "pr", "reviewer", str(root / "project"),
                    "Review {{ payload.pull_request.html_url }}", str(secret),
                    fingerprint(SECRET), trigger_rate, time.time(), "admin", "chat",
                )
            )  # fmt: skip
            scheduler = deck.start_scheduling()
            await asyncio.sleep(1.0)  # its catch-up pass and first tick
            names = (f"s{count - 1 - i:04d}" for i in range(count))

            # Phase 1: quiet.
            t_cpu, t_wall = time.process_time(), time.monotonic()
            quiet = [await due_round(deck, store, scheduler, next(names)) for _ in range(rounds)]
            quiet_cpu = (time.process_time() - t_cpu) / (time.monotonic() - t_wall)

            # Phase 2: under the delivery load.
            load, stop = Load(), asyncio.Event()
            reaper = asyncio.create_task(reap(deck, load, stop))
            t_cpu, t_wall = time.process_time(), time.monotonic()
            sender = asyncio.create_task(deliver(deck, load, per_second, seconds, bad, replay))
            loaded: list[Due] = []
            while not sender.done():
                tick = time.monotonic()
                loaded.append(await due_round(deck, store, scheduler, next(names)))
                await asyncio.sleep(max(0.0, due_every - (time.monotonic() - tick)))
            await sender
            load_cpu = time.process_time() - t_cpu
            load_wall = time.monotonic() - t_wall
            stop.set()
            await reaper

            answered = sum(len(v) for v in load.ms.values())
            print(
                f"deliveries: {answered} of {load.sent} answered in {load.elapsed:.1f} s, "
                f"{answered / load.elapsed:.1f}/s achieved (asked {per_second:g}/s; "
                f"{load.late_sends} sent > 50 ms late; trigger rate {trigger_rate}/min, "
                f"AGENTDECK_MAX_LIVE_AGENTS={max_live}, {bad:.0%} bad signature, "
                f"{replay:.0%} replayed ids)"
            )
            for what in sorted(load.ms):
                ms = load.ms[what]
                print(
                    f"  {what}: {len(ms)} ({len(ms) / answered:.0%}), p50 {median(ms):.1f} ms, "
                    f"p99 {percentile(ms, 99):.1f} ms"
                )
            due_line(f"quiet ({rounds} rounds)", quiet)
            due_line(f"under the load (one due every {due_every:g} s)", loaded)
            all_ms = [m for v in load.ms.values() for m in v]
            per_delivery = (load_cpu - quiet_cpu * load_wall) / max(1, answered) * 1000
            print(
                f"process CPU (the deck's Python process; Claude Code's own not counted): "
                f"quiet {quiet_cpu:.0%} of a core, under the load {load_cpu / load_wall:.0%} "
                f"(~{per_delivery:.2f} ms a delivery above quiet; deliveries' p50 all "
                f"{median(all_ms):.1f} ms)"
            )
        finally:
            await deck.close()
