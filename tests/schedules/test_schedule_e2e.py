"""One schedule end to end on a real daemon (``serve`` as ``agentdeck up`` runs it)
with the real ``agentdeck`` command: added through the CLI (so through the daemon's
API, owned by the token's user), fired by the daemon's own scheduler when the test
moves its clock to the due time, and run by hand with ``schedule run``; each time
the scripted agent runs to its end, and the history and the /schedules page link to
the agents. Bad input from the command line is a clear error before any deck opens."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.settings import Settings
from tests.schedules.clock import ManualClock
from tests.support.deckcli import Done, deck, deck_env
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio
SETTLE = 90.0


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[Served]:
    async with serving(settings) as s:
        yield s


async def cli(env: dict[str, str], *args: str, timeout: float = SETTLE) -> Done:
    """The command in a thread: the daemon answers it from this test's loop."""
    return await asyncio.to_thread(deck, env, *args, timeout=timeout)


async def _ended(served: Served, agent_id: str) -> None:
    async def probe() -> bool:
        return (await served.deck.get_agent(agent_id)).state is AgentState.DONE

    await eventually(probe, timeout=SETTLE, what=f"agent {agent_id} to end")


async def test_a_schedule_fires_on_the_daemon_and_runs_by_hand(
    served: Served, tmp_path: Path
) -> None:
    env = deck_env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    added = await cli(
        env, "schedule", "add", "every-minute", "--cron", "* * * * *", "--scenario", "chat",
        "--prompt", "hello from the schedule", "--cwd", str(work), "--json",
    )  # fmt: skip
    assert added.code == 0, added.err
    made = added.json()
    assert made["created_by"] == "admin" and made["project"] == str(work.resolve())

    # The daemon's scheduler, on a clock the test moves: at the due time it fires.
    clock = ManualClock(time.time())
    scheduler = served.deck._schedule_runner(clock)
    scheduler.poke()
    clock.advance(max(0.0, made["next_at"] - clock.now()) + 0.5)

    async def fired() -> str | None:
        runs = (await served.deck.schedule("every-minute")).runs
        return runs[0].agent_id if runs and runs[0].agent_id else None

    first = await eventually(fired, timeout=SETTLE, what="the due run")
    await _ended(served, first)
    events = await served.deck.events(after=0, agent_id=first)
    assert any("scripted model" in str(e.data.get("text", "")) for e in events)

    ran = await cli(env, "schedule", "run", "every-minute", "--json")
    assert ran.code == 0, ran.err
    by_hand = ran.json()
    assert by_hand["outcome"] == "started" and by_hand["agent"]["state"] == "done"

    shown = await cli(env, "schedule", "show", "every-minute", "--json")
    assert shown.code == 0, shown.err
    runs = shown.json()["runs"]
    assert [r["agent_id"] for r in runs] == [by_hand["agent_id"], first]
    assert all(r["outcome"] == "started" for r in runs)
    async with served.api() as api:
        page = await api.get("/schedules")
    assert page.status_code == 200
    for agent_id in (first, by_hand["agent_id"]):
        assert f'href="/agents/{agent_id}"' in page.text

    listed = await cli(env, "schedule", "ls")
    assert listed.code == 0 and "every-minute" in listed.out
    assert (await cli(env, "schedule", "rm", "every-minute")).code == 0
    assert await served.deck.schedules() == []


def test_bad_input_on_the_command_line_is_one_clear_line(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    for args, said in [
        (["--cron", "61 * * * *"], "bad cron expression"),
        (["--cron", "* * * * *", "--tz", "Mars/Base"], "unknown time zone"),
        (["--cron", "* * * * *", "--overlap", "maybe"], "bad overlap"),
    ]:
        done = deck(env, "schedule", "add", "x", "--scenario", "chat", "--prompt", "p", *args)
        assert done.code != 0
        assert said in done.err, done.err
        assert "Traceback" not in done.err
