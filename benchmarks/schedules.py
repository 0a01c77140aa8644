"""What schedules cost the deck (issue 33): 1,000 schedules on one deck (the daemon's
Deck in process, SQLite, agents on the scripted model).

* A wake-up of the scheduler with 1,000 schedules and none due (the rows read, the
  next nap worked out): its CPU; and the scheduler's CPU over an idle window, per
  minute (it naps until the soonest due time, at most 60 s).
* One due run's scheduler-side CPU (budget and overlap decisions, the claim, the
  settle) with the agent's start left out (``start_agent`` answers at once).
* From due to agent started (the run's agent placed: ``create_agent`` returned), and
  to its Claude Code running the turn (state past queued/starting), each round one of
  the 1,000 made due 0.5 s ahead, the scheduler waking by itself at that time
  (goal: <= 1 s).

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/schedules.py \
        [--schedules 1000] [--rounds 10] [--idle-seconds 20]

With ``--triggers-per-second N`` (e.g. 100 ``--seconds 30``): the same 1,000 schedules
and N signed webhook deliveries a second at once (benchmarks/schedules_load.py says
what is measured and its other flags).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

from _common import header, median, percentile
from agentdeck.core.agent import AgentState
from agentdeck.core.schedules import RunOutcome, Schedule, check_schedule, next_due
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.scheduler import Scheduler
from agentdeck.settings import Settings
from agentdeck.store.schedules import ScheduleStore
from agentdeck.store.schema_schedules import schedules

DAILY = "{m} {h} * * *"


async def add_daily(store: ScheduleStore, count: int, project: Path, now: float) -> None:
    """``count`` daily schedules s0000… spread over the day, none due now."""
    for i in range(count):
        cron = DAILY.format(m=i % 60, h=(i // 60) % 24)
        s = check_schedule(
            Schedule(
                f"s{i:04d}", cron, "hello", str(project), now, "admin",
                next_at=now + 3600 + i, scenario="chat",
            )
        )  # fmt: skip
        await store.add(s)


BOOTING = (AgentState.QUEUED, AgentState.STARTING)


async def instant_agent(schedule: Schedule) -> str:
    return "a-benchmark"


async def not_running(agent_id: str) -> bool:
    return False


async def no_cost(ids: list[str]) -> float:
    return 0.0


async def main(count: int, rounds: int, idle_seconds: float) -> None:
    logging.getLogger("agentdeck").setLevel(logging.WARNING)
    header(f"schedules: {count} on one deck")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        settings = Settings(home=root / "home", claude_config_dir=root / "claude", warm_pool=0)
        deck = await open_deck(settings)
        try:
            store = ScheduleStore(deck._store)
            now = time.time()
            await add_daily(store, count, root / "project", now)

            # A wake-up with nothing due.
            quiet = Scheduler(
                store, start_agent=instant_agent, running=not_running, cost_of=no_cost
            )
            cpu: list[float] = []
            for _ in range(200):
                t = time.process_time()
                await quiet.tick()
                await quiet._nap()
                cpu.append((time.process_time() - t) * 1000)
            print(
                f"a wake-up, {count} schedules, none due: median {median(cpu):.2f} ms CPU, "
                f"p95 {percentile(cpu, 95):.2f} ms"
            )

            # The process over an idle window, without and then with the scheduler.
            t = time.process_time()
            await asyncio.sleep(idle_seconds)
            without = time.process_time() - t
            scheduler = deck.start_scheduling()
            await asyncio.sleep(1.0)  # its catch-up pass and first tick
            t, ticks = time.process_time(), scheduler.ticks
            await asyncio.sleep(idle_seconds)
            used = time.process_time() - t
            per_min = 60 / idle_seconds * 1000
            print(
                f"scheduler's added CPU, idle: {(used - without) * per_min:.1f} ms per minute "
                f"(process {used * per_min:.1f} with it, {without * per_min:.1f} without; "
                f"{scheduler.ticks - ticks} wake-ups in {idle_seconds:.0f} s)"
            )

            # One due run, the agent's start left out.
            side = Scheduler(store, start_agent=instant_agent, running=not_running, cost_of=no_cost)
            due_cpu: list[float] = []
            for i in range(100):
                name = f"s{i:04d}"
                found = await store.get(name)
                await _make_due(deck, name, time.time() - 1)
                found = await store.get(name)
                t = time.process_time()
                await side._due(found, time.time())
                due_cpu.append((time.process_time() - t) * 1000)
                await _make_due(deck, name, next_due(found.cron, found.tz, time.time()))
            print(
                f"a due run, scheduler side (agent start left out): median "
                f"{median(due_cpu):.2f} ms CPU, p95 {percentile(due_cpu, 95):.2f} ms"
            )

            # Due to agent started, real agents.
            late: list[float] = []
            running: list[float] = []
            for i in range(rounds):
                name = f"s{count - 1 - i:04d}"
                due = time.time() + 0.5
                await _make_due(deck, name, due)
                scheduler.poke()  # as add/resume do: the soonest due time changed
                while True:
                    runs = await store.runs(name, limit=1)
                    if runs and runs[0].outcome is not RunOutcome.FAILED:
                        break
                    await asyncio.sleep(0.01)
                run = runs[0]
                assert run.outcome is RunOutcome.STARTED, run
                late.append(run.at - run.due_at)
                while True:
                    if (await deck.get_agent(run.agent_id or "")).state not in BOOTING:
                        break
                    await asyncio.sleep(0.01)
                running.append(time.time() - run.due_at)
            print(
                f"due to agent started: median {median(late) * 1000:.0f} ms, p95 "
                f"{percentile(late, 95) * 1000:.0f} ms, max {max(late) * 1000:.0f} ms "
                f"({rounds} rounds; goal <= 1000 ms)"
            )
            print(
                f"due to its Claude Code running the turn: median {median(running) * 1000:.0f} "
                f"ms, p95 {percentile(running, 95) * 1000:.0f} ms (observed every 10 ms)"
            )
        finally:
            await deck.close()


async def _make_due(deck: object, name: str, at: float) -> None:
    import sqlalchemy as sa

    store = deck._store  # type: ignore[attr-defined]
    await store._write(
        lambda conn: conn.execute(
            sa.update(schedules).where(schedules.c.name == name).values(next_at=at)
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    load = parser.add_argument_group("schedules and webhook deliveries at once")
    load.add_argument("--triggers-per-second", type=float, default=0.0)
    load.add_argument("--seconds", type=float, default=30.0, help="the load's length")
    load.add_argument("--trigger-rate", type=int, default=12, help="the trigger's N/min")
    load.add_argument("--max-live", type=int, default=8, help="AGENTDECK_MAX_LIVE_AGENTS")
    load.add_argument("--bad-share", type=float, default=0.05, help="wrong signatures")
    load.add_argument("--replay-share", type=float, default=0.20, help="repeated ids")
    load.add_argument("--due-every", type=float, default=2.0, help="s between due runs")
    args = parser.parse_args()
    if args.triggers_per_second > 0:
        import schedules_load

        asyncio.run(
            schedules_load.main(
                args.schedules, args.rounds, args.triggers_per_second, args.seconds,
                trigger_rate=args.trigger_rate, max_live=args.max_live,
                bad=args.bad_share, replay=args.replay_share, due_every=args.due_every,
            )
        )  # fmt: skip
    else:
        asyncio.run(main(args.schedules, args.rounds, args.idle_seconds))
