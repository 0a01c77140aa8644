from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentdeck.core.events import AssistantText, Event, StoredEvent, ToolCalled, from_record
from agentdeck.errors import StoreError
from agentdeck.store import Store
from agentdeck.store.rows import event_to_row

from .conftest import Collector, db_rows, text

pytestmark = pytest.mark.anyio


async def test_append_returns_stored_events_that_read_back(store: Store) -> None:
    call = ToolCalled(
        agent_id="a1",
        ts=12.5,
        tool_use_id="t1",
        tool="Bash",
        input={"command": "pytest -q", "nested": {"ü": [1, 2]}},
    )
    stored = await store.append([text("a1", 0), call])
    assert [s.id for s in stored] == [1, 2]
    assert stored[1].type == "tool_called"
    assert await store.read() == stored
    assert from_record(stored[1]) == call
    assert await store.last_event_id() == 2


async def test_a_lone_surrogate_is_replaced_not_a_lost_batch(store: Store) -> None:
    # JSON from the CLI may carry "\\ud800"; SQLite cannot store it as UTF-8.
    call = ToolCalled(
        agent_id="a1", ts=1.0, tool_use_id="t1", tool="Bash", input={"command": "echo \ud800ü"}
    )
    stored = await store.append([text("a1", 0), call, text("a1", 2)])
    assert len(stored) == 3
    [_, kept, _] = await store.read()
    assert kept.data["input"]["command"] == "echo \ufffdü"


async def test_a_nul_in_json_is_kept_or_replaced_never_a_lost_batch(store: Store) -> None:
    """jsonb holds no NUL (SQLite's JSON text does): on PostgreSQL it becomes
    U+FFFD, as a lone surrogate does; a literal backslash-u0000 stays as typed."""
    typed = {"command": r"printf 'a\x00b'", "raw": r"a\u0000b \\u0000"}  # no NUL in these
    call = ToolCalled(
        agent_id="a1", ts=1.0, tool_use_id="t1", tool="Bash", input={**typed, "nul": "x\x00y"}
    )
    stored = await store.append([text("a1", 0), call, text("a1", 2)])
    assert len(stored) == 3
    [_, kept, _] = await store.read()
    nul = "\x00" if store.has_file else "\ufffd"
    assert kept.data["input"] == {**typed, "nul": f"x{nul}y"}


async def test_empty_append_and_empty_log(store: Store) -> None:
    assert await store.append([]) == []
    assert await store.last_event_id() == 0
    assert await store.read() == []


async def test_read_filters(store: Store) -> None:
    await store.append([text("a1", 0), text("a2", 1), text("a1", 2)])
    await store.append([ToolCalled(agent_id="a2", ts=1.0, tool_use_id="t", tool="Read", input={})])
    assert [e.id for e in await store.read(after=1)] == [2, 3, 4]
    assert [e.id for e in await store.read(agent_id="a1")] == [1, 3]
    assert [e.id for e in await store.read(types=["tool_called"])] == [4]
    assert [e.id for e in await store.read(agent_id="a2", types=["assistant_text"])] == [2]
    assert [e.id for e in await store.read(after=1, limit=2)] == [2, 3]


async def test_ids_monotonic_under_50_concurrent_appenders(store: Store) -> None:
    per_task: dict[int, list[int]] = {}

    async def appender(n: int) -> None:
        ids: list[int] = []
        for i in range(40):
            chunk: Sequence[Event] = [text(f"agent{n}", i * 3 + k) for k in range(1 + i % 3)]
            ids += [s.id for s in await store.append(chunk)]
        per_task[n] = ids

    async with asyncio.TaskGroup() as tg:
        for n in range(50):
            tg.create_task(appender(n))

    everything = [i for ids in per_task.values() for i in ids]
    assert len(everything) == len(set(everything))
    assert sorted(everything) == list(range(1, len(everything) + 1))
    for ids in per_task.values():
        assert ids == sorted(ids)
    log = await store.read(limit=10_000)
    assert [e.id for e in log] == list(range(1, len(everything) + 1))
    for n, ids in per_task.items():
        mine = [e for e in log if e.agent_id == f"agent{n}"]
        assert [e.id for e in mine] == ids
        # each task's texts come back in the order it appended them
        texts = [int(e.data["text"].split()[1]) for e in mine]
        assert texts == sorted(texts)


async def test_batch_keeps_submission_order(target: Path | str) -> None:
    store = Store.open(target, batch_size=7)  # one append is never split across batches
    try:
        first = await store.append([text("a", i) for i in range(300)])
        concurrent = await asyncio.gather(
            *(store.append([text(f"b{n}", i) for i in range(5)]) for n in range(20))
        )
    finally:
        await store.close()
    assert [s.data["text"] for s in first] == [f"msg {i}" for i in range(300)]
    assert [s.id for s in first] == list(range(1, 301))
    for stored in concurrent:
        assert [s.data["text"] for s in stored] == [f"msg {i}" for i in range(5)]
        assert [s.id for s in stored] == sorted(s.id for s in stored)


async def test_subscriber_sees_only_committed_events_in_id_order(store: Store) -> None:
    missing: list[int] = []
    collector = Collector()

    def check_committed(events: Sequence[StoredEvent]) -> None:
        # A separate connection, as another process would use: the rows must be there.
        for e in events:
            if not db_rows(store, "SELECT 1 FROM events WHERE id = ?", (e.id,)):
                missing.append(e.id)
        collector(events)

    unsubscribe = store.subscribe(check_committed)
    async with asyncio.TaskGroup() as tg:
        for n in range(10):
            tg.create_task(store.append([text(f"a{n}", i) for i in range(10)]))
    await collector.wait_count(100)
    unsubscribe()
    assert missing == []
    ids = [e.id for e in collector.events]
    assert ids == sorted(ids) == list(range(1, 101))
    for batch in collector.batches:
        assert [e.id for e in batch] == sorted(e.id for e in batch)

    await store.append([text("late", 0)])
    assert len(collector.events) == 100  # unsubscribed: nothing more


async def test_failing_subscriber_does_not_break_the_log(store: Store) -> None:
    def boom(events: Sequence[StoredEvent]) -> None:
        raise RuntimeError("subscriber bug")

    collector = Collector()
    store.subscribe(boom)
    store.subscribe(collector)
    await store.append([text("a", 0)])
    await store.append([text("a", 1)])
    await collector.wait_count(2)
    assert await store.last_event_id() == 2


async def test_close_flushes_everything_appended_before_it(target: Path | str) -> None:
    store = Store.open(target, batch_size=10)
    tasks = [
        asyncio.create_task(store.append([text(f"a{n}", i) for i in range(20)])) for n in range(50)
    ]
    await asyncio.sleep(0)  # one loop turn: every task has queued its append
    await store.close()
    results = await asyncio.gather(*tasks)
    assert sum(len(r) for r in results) == 1000
    assert db_rows(target, "SELECT count(*), max(id) FROM events") == [(1000, 1000)]

    with pytest.raises(StoreError, match="closed"):
        await store.append([text("a", 0)])
    with pytest.raises(StoreError, match="closed"):
        await store.read()
    await store.close()  # idempotent


async def test_ids_continue_after_reopen(target: Path | str) -> None:
    async with Store.open(target) as store:
        await store.append([text("a", i) for i in range(3)])
    async with Store.open(target) as store:
        stored = await store.append([text("a", 3)])
        assert stored[0].id == 4
        assert await store.last_event_id() == 4


async def test_events_are_scrubbed_before_they_are_written_or_handed_out(store: Store) -> None:
    key = "sk-ant-api03-" + "Hk2" * 30
    collector = Collector()
    unsubscribe = store.subscribe(collector)
    small = ToolCalled(
        agent_id="a1", ts=1.0, tool_use_id="t1", tool="Bash",
        input={"command": f"curl -H 'x-api-key: {key}' https://api.example.com"},
    )  # fmt: skip
    # Large enough to be scrubbed off the event loop, in a worker thread.
    large = AssistantText(agent_id="a1", ts=2.0, text="x " * 40_000 + f"ANTHROPIC_API_KEY={key}")
    stored = await store.append([small, large])
    await collector.wait_count(2)
    unsubscribe()
    raw = " ".join(str(row[0]) for row in db_rows(store, "SELECT data FROM events"))
    for seen in (str([s.data for s in stored]), str([e.data for e in collector.events]), raw):
        assert key not in seen and seen.count("[REDACTED:") == 2
    assert stored[0].data["tool_use_id"] == "t1" and stored[0].data["tool"] == "Bash"


async def test_costs_roll_up_per_agent_and_hour_with_the_events(store: Store) -> None:
    """The writer adds each turn's cost to its agent's hour as it appends it:
    new rows and existing ones, in one batch and across batches."""
    import math

    from agentdeck.core.events import AssistantText, CostUpdated
    from agentdeck.core.usage import Bucket, UsageGroup
    from agentdeck.store.usage import usage_points

    def cost(agent: str, ts: float, delta: float) -> CostUpdated:
        return CostUpdated(
            agent_id=agent, ts=ts, cost_usd=1.0, input_tokens=10, output_tokens=1, delta_usd=delta
        )

    await store.append([cost("a1", 3600.0, 0.1), cost("a1", 3700.0, 0.2), cost("a2", 3600.0, 1.0)])
    await store.append([cost("a1", 3900.0, 0.4), cost("a1", 7300.0, 0.8)])
    await store.append([AssistantText(agent_id="a1", ts=3601.0, text="not a cost")])

    def rows(conn: object) -> list[tuple[object, ...]]:
        import sqlalchemy as sa

        from agentdeck.store.schema import usage_hours

        stmt = sa.select(usage_hours).order_by(usage_hours.c.agent_id, usage_hours.c.hour)
        return [tuple(r) for r in conn.execute(stmt)]  # type: ignore[attr-defined]

    got = await store._read(rows)
    assert [(a, h, n, tin) for a, h, _, tin, _, n in got] == [
        ("a1", 3600.0, 3, 30), ("a1", 7200.0, 1, 10), ("a2", 3600.0, 1, 10)
    ]  # fmt: skip
    assert math.isclose(got[0][2], 0.7) and math.isclose(got[1][2], 0.8)
    # No agents rows for them: the usage query joins agents, so it counts none.
    points = await store._read(
        lambda c: usage_points(c, since=0, until=10**6, bucket=Bucket.DAY, by=UsageGroup.NONE)
    )
    assert points == []


async def test_a_batch_is_held_from_log_readers_until_its_callers_are_told(store: Store) -> None:
    """``unsettled_floor``: what the hub's reads of the log stop short of. It is
    nothing once each write's caller has been told, whether the write landed or
    failed (a rolled-back batch holds nothing back)."""
    assert store.unsettled_floor() is None
    floors: list[int | None] = []
    called = threading.Event()

    def seen(events: Sequence[StoredEvent]) -> None:  # the writer thread, after settling
        floors.append(store.unsettled_floor())
        called.set()

    store.subscribe(seen)
    written = await store.append([text("a", 0), text("a", 1)])
    assert store.unsettled_floor() is None
    # The subscribers are called after the callers' loops are handed their results:
    # the caller may resume first. Let go on the loop: maybe not yet when called.
    assert await asyncio.to_thread(called.wait, 30)
    assert floors in ([None], [written[0].id])

    def boom(conn: object) -> None:
        raise RuntimeError("an operation failed after the events were inserted")

    with pytest.raises(StoreError):
        await store._writer.submit([event_to_row(text("b", 0))], op=boom)
    assert store.unsettled_floor() is None
    assert [e.agent_id for e in await store.read()] == ["a", "a"]  # rolled back, whole
