"""The dashboard with 1,000 agents and 1,000,000 events: every page is bounded.

Not a timed test: it asserts on what is rendered (rows, entries, bytes) and on
the limits of the queries the pages make. The seeding (through the store, in
batches of 5,000) takes about 35 s here; the timings of the page loads are
logged (``-o log_cli=true --log-cli-level=INFO`` shows them).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText, Event, ToolCalled, ToolReturned
from agentdeck.store.store import Store

from .conftest import RunningDaemon
from .dashboard_support import items_in, logged_in, rows_in

pytestmark = pytest.mark.anyio
logger = logging.getLogger(__name__)

AGENTS = 1_000
EVENTS = 1_000_000
BATCH = 5_000
HOT = "hot0000"  # every tenth event is this agent's: 100,000 of them
STATES: list[AgentState] = list(AgentState)


def agent(i: int) -> Agent:
    agent_id = HOT if i == 0 else f"ag{i:05d}"
    return Agent(
        id=agent_id,
        name=f"worker-{i}",
        state=STATES[i % len(STATES)],
        spec=AgentSpec(prompt=f"task {i}"),
        cwd="/tmp/w",
        created_at=1_000_000.0 + i,
        updated_at=1_000_000.0 + i,
        cost_usd=0.01,
        turns=i % 7,
    )


def events(start: int, count: int) -> list[Event]:
    out: list[Event] = []
    for n in range(start, start + count):
        agent_id = HOT if n % 10 == 0 else f"ag{1 + n % (AGENTS - 1):05d}"
        out.append(AssistantText(agent_id=agent_id, ts=1_000_000.0 + n, text=f"event {n}"))
    return out


def big_tool_pairs(count: int) -> list[Event]:
    """The hot agent's last events: tool calls with 32 KiB outputs."""
    out: list[Event] = []
    for k in range(count):
        tid = f"t{k}"
        out.append(ToolCalled(agent_id=HOT, ts=2e6, tool_use_id=tid, tool="Bash", input={"k": k}))
        out.append(
            ToolReturned(agent_id=HOT, ts=2e6, tool_use_id=tid, output="x" * 32768, size=32768)
        )
    return out


async def seed(store: Store) -> None:
    await asyncio.gather(*(store.save_agent(agent(i)) for i in range(AGENTS)))
    for start in range(0, EVENTS - 200, BATCH):
        await store.append(events(start, min(BATCH, EVENTS - 200 - start)))
    await store.append(big_tool_pairs(100))


def spy_limits(store: Store, calls: list[tuple[str, int]]) -> None:
    """Record the ``limit`` of every read the pages make (not the event hub's: it
    polls the log for other processes' events, in pages of its own, whenever it
    wakes, which a slow run may well see)."""
    for name in ("read", "read_tail", "list_agents"):
        original: Callable[..., Awaitable[Any]] = getattr(store, name)

        @functools.wraps(original)
        async def wrapper(*args: Any, _name: str = name, _orig: Any = original, **kw: Any) -> Any:
            task = asyncio.current_task()
            if task is None or task.get_name() != "event-hub":
                calls.append((_name, int(kw.get("limit", -1))))
            return await _orig(*args, **kw)

        setattr(store, name, wrapper)


async def test_board_and_agent_page_stay_bounded(daemon: RunningDaemon) -> None:
    store = daemon.deck._store
    started = time.monotonic()
    await seed(store)
    logger.info(
        "seeded %d agents and %d events in %.1fs", AGENTS, EVENTS, time.monotonic() - started
    )
    assert await store.last_event_id() == EVENTS
    calls: list[tuple[str, int]] = []
    spy_limits(store, calls)

    async with logged_in(daemon) as web:
        timings = {}

        async def get(url: str, **params: Any) -> str:
            t0 = time.monotonic()
            response = await web.get(url, params=params)
            timings[f"{url} {params}"] = time.monotonic() - t0
            assert response.status_code == 200, response.text[:500]
            return response.text

        board = await get("/")
        assert len(rows_in(board)) == 50
        assert len(board.encode()) < 120_000
        assert "page 1 of 20" in board and f"{AGENTS} agents" in board
        assert len(rows_in(await get("/", page=20))) == 50
        assert rows_in(await get("/", page=21)) == []
        running = await get("/", state="running")
        expected = sum(1 for i in range(AGENTS) if STATES[i % len(STATES)] == "running")
        assert len(rows_in(running)) == 50 and f"{expected} agents" in running

        page = await get(f"/agents/{HOT}")
        ids = items_in(page)
        # The last 200 events: 100 tool calls, each with its 32 KiB result folded in.
        assert len(ids) == 100
        assert ids[-1] == EVENTS - 1
        assert len(page.encode()) < 700_000  # 3.2 MB of outputs, 4 KiB of each shown
        older = await get(f"/ui/agents/{HOT}/older", before=ids[0])
        assert len(items_in(older)) == 200

        activity = await get("/activity")
        assert activity.count('class="feed-item') <= 100

    assert calls, "the spy saw no reads"
    assert max(limit for _, limit in calls) <= 201, calls
    assert all(limit > 0 for _, limit in calls), calls
    for what, seconds in timings.items():
        logger.info("%-60s %.3fs", what, seconds)
