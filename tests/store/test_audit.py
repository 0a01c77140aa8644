"""The audit table: appends through the one write path, a linear chain across
Store instances, streamed verification, and tampering through plain sqlite3."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.audit import GENESIS, AuditDecision, AuditProblem, AuditRecord, verify
from agentdeck.core.events import CostUpdated, Event, StateChanged
from agentdeck.store import Store

from .conftest import db_rows

pytestmark = pytest.mark.anyio

N = 1000


def decision(n: int, agent_id: str = "a1") -> AuditRecord:
    return AuditRecord.for_input(
        agent_id=agent_id,
        tool="Bash",
        tool_input={"command": f"pytest -k t{n}"},
        decision=AuditDecision.ALLOW if n % 3 else AuditDecision.DENIED,
        reason=f"decision {n}",
        rule="Bash(pytest *)" if n % 2 else None,
        answered_by="policy" if n % 3 else "user:cli",
        ts=1_700_000_000 + n / 10,
    )


async def fill(store: Store, n: int, agent_id: str = "a1") -> None:
    await asyncio.gather(*(store.append_audit(decision(i, agent_id)) for i in range(n)))


def tamper(store: Store, sql: str, params: tuple[object, ...] = ()) -> None:
    db_rows(store, sql, params)


async def test_append_returns_the_chained_entry(store: Store) -> None:
    first = await store.append_audit(decision(1))
    second = await store.append_audit(decision(2))
    assert (first.id, first.prev_hash) == (1, GENESIS)
    assert (second.id, second.prev_hash) == (2, first.hash)
    assert await store.read_audit() == [first, second]
    assert db_rows(store, "SELECT id, hash FROM audit ORDER BY id") == [
        (1, first.hash),
        (2, second.hash),
    ]


async def test_a_thousand_concurrent_appends_form_one_valid_chain(store: Store) -> None:
    await fill(store, N)
    entries = await store.read_audit(limit=N + 1)
    assert [e.id for e in entries] == list(range(1, N + 1))
    assert verify(entries).ok
    result = await store.verify_audit(page_size=7)  # many pages, one at a time
    assert result.ok and result.count == N and result.head == entries[-1].hash


async def test_two_stores_on_one_database_keep_the_chain_linear(target: Path | str) -> None:
    one = Store.open(target)
    two = Store.open(target)
    try:
        await asyncio.gather(fill(one, N // 2, "from-one"), fill(two, N // 2, "from-two"))
        result = await one.verify_audit()
        assert result.ok and result.count == N
        entries = await two.read_audit(limit=N)
        agents = {e.agent_id for e in entries}
        assert agents == {"from-one", "from-two"}
        # Interleaved, yet every prev_hash is the entry before it: no fork.
        assert len({e.prev_hash for e in entries}) == N
    finally:
        await one.close()
        await two.close()


async def test_read_filters_and_tail(store: Store) -> None:
    await fill(store, 10, "a1")
    await fill(store, 5, "a2")
    assert [e.id for e in await store.read_audit(after=12)] == [13, 14, 15]
    assert {e.agent_id for e in await store.read_audit(agent_id="a2")} == {"a2"}
    assert [e.id for e in await store.read_audit_tail(limit=3, agent_id="a1")] == [8, 9, 10]
    assert [e.id for e in await store.read_audit_tail(limit=2)] == [14, 15]


async def test_an_empty_log_verifies(store: Store) -> None:
    result = await store.verify_audit()
    assert result.ok and result.count == 0 and result.head == GENESIS


K = 417


async def broken(store: Store, sql: str, params: tuple[object, ...] = ()) -> tuple[int, str]:
    await fill(store, N)
    tamper(store, sql, params)
    result = await store.verify_audit(page_size=100)
    assert not result.ok and result.entry_id is not None and result.problem is not None
    return result.entry_id, str(result.problem)


@pytest.mark.parametrize(
    "change",
    [
        "decision = CASE decision WHEN 'allow' THEN 'deny' ELSE 'allow' END",
        "reason = reason || '.'",
        "ts = ts + 0.5",
        "answered_by = 'user:web'",
        "rule = 'Bash(*)'",
        "input_digest = upper(input_digest)",
        "prev_hash = hash",
    ],
)
async def test_an_edited_field_is_reported_at_that_entry(store: Store, change: str) -> None:
    sql = f"UPDATE audit SET {change} WHERE id = ?"
    assert await broken(store, sql, (K,)) == (K, AuditProblem.EDITED)


async def test_a_deleted_entry_is_reported_at_its_own_id(store: Store) -> None:
    # The report names the MISSING id (K), not the entry after the gap.
    assert await broken(store, "DELETE FROM audit WHERE id = ?", (K,)) == (
        K,
        AuditProblem.REMOVED,
    )


async def test_deleting_the_first_entry_is_reported(store: Store) -> None:
    assert await broken(store, "DELETE FROM audit WHERE id = 1") == (1, AuditProblem.REMOVED)


async def test_swapped_entries_are_reported(store: Store) -> None:
    await fill(store, N)
    cols = "ts, agent_id, tool, input_digest, decision, rule, reason, answered_by, prev_hash, hash"
    rows = {
        i: db_rows(store, f"SELECT {cols} FROM audit WHERE id = ?", (i,))[0] for i in (K, K + 5)
    }
    sets = ", ".join(f"{c} = ?" for c in cols.split(", "))
    for i, j in ((K, K + 5), (K + 5, K)):
        tamper(store, f"UPDATE audit SET {sets} WHERE id = ?", (*rows[j], i))
    result = await store.verify_audit(page_size=100)
    assert (result.entry_id, result.problem) == (K, AuditProblem.EDITED)


async def test_a_forged_tail_entry_is_reported(store: Store) -> None:
    forged = (
        "INSERT INTO audit (id, ts, agent_id, tool, input_digest, decision, rule, reason,"
        " answered_by, prev_hash, hash) VALUES (?, 1.0, 'a1', 'Bash', 'x', 'allow', NULL,"
        " 'forged', 'policy', ?, ?)"
    )
    result = await broken(store, forged, (N + 1, "e" * 64, "f" * 64))
    assert result == (N + 1, AuditProblem.EDITED)


async def test_a_forged_tail_entry_with_a_valid_own_hash_but_wrong_link(store: Store) -> None:
    from agentdeck.core.audit import seal
    from agentdeck.store.audit import entry_to_row

    entry = seal("e" * 64, N + 1, decision(N + 1))
    row = entry_to_row(entry)
    cols = ", ".join(row)
    sql = f"INSERT INTO audit ({cols}) VALUES ({', '.join('?' * len(row))})"
    result = await broken(store, sql, tuple(row.values()))
    assert result == (N + 1, AuditProblem.BROKEN_LINK)


async def test_appends_after_a_break_still_chain_onto_the_head(store: Store) -> None:
    await fill(store, 3)
    tamper(store, "DELETE FROM audit WHERE id = 2")
    entry = await store.append_audit(decision(9))
    assert entry.id == 4 and entry.prev_hash == (await store.read_audit(after=2))[0].hash
    result = await store.verify_audit()
    assert (result.entry_id, result.problem, result.count) == (2, AuditProblem.REMOVED, 1)


# --- spend_since ----------------------------------------------------------------


def starting(agent_id: str, ts: float) -> StateChanged:
    return StateChanged(agent_id=agent_id, ts=ts, old=None, new=AgentState.STARTING)


def running(agent_id: str, ts: float) -> StateChanged:
    return StateChanged(agent_id=agent_id, ts=ts, old="starting", new=AgentState.RUNNING)


def spent(agent_id: str, ts: float, usd: float, delta: float = 0.0) -> CostUpdated:
    return CostUpdated(
        agent_id=agent_id, ts=ts, cost_usd=usd, input_tokens=1, output_tokens=1, delta_usd=delta
    )


def history() -> list[Event]:
    """Two processes of agent a (a resume at t=60), one of b, one of c before t=40."""
    return [
        starting("a", 10),
        running("a", 11),
        spent("a", 20, 0.10, 0.10),
        starting("c", 21),
        spent("c", 22, 0.50, 0.50),
        spent("a", 30, 0.25, 0.15),  # process 1 of a: 0.25 in all, 0.15 after t=25
        spent("a", 50, 0.40, 0.15),
        starting("b", 52),
        spent("b", 53, 0.20, 0.20),
        spent("b", 54, 0.0),  # a result without a cost
        spent("b", 55, 0.30, 0.10),
        starting("a", 60),
        running("a", 61),
        spent("a", 70, 0.05, 0.05),  # process 2 of a restarts its running total
        spent("a", 80, 0.12, 0.07),
    ]


def drop_deltas(store: Store) -> None:
    """Make the log look like one written before CostUpdated carried delta_usd."""
    if store.has_file:
        tamper(store, "UPDATE events SET data = json_remove(data, '$.delta_usd')")
    else:
        tamper(store, "UPDATE events SET data = data - 'delta_usd'")


@pytest.mark.parametrize("legacy", [False, True], ids=["delta_usd", "running-totals"])
@pytest.mark.parametrize(
    "since, expected",
    [
        (0, 0.40 + 0.12 + 0.30 + 0.50),  # every process's final running total
        (25, 0.30 + 0.12 + 0.30),  # a: 0.40-0.10 then 0.12; c spent before
        (51, 0.12 + 0.30),
        (56, 0.12),
        (75, 0.07),
        (81, 0.0),
    ],
)
async def test_spend_since_sums_what_each_turn_cost(
    store: Store, since: float, expected: float, legacy: bool
) -> None:
    await store.append(history())
    if legacy:
        drop_deltas(store)
    assert await store.spend_since(since) == pytest.approx(expected)


async def test_old_running_totals_take_a_drop_without_a_start_as_a_new_process(
    store: Store,
) -> None:
    await store.append([spent("x", 1, 0.5), spent("x", 2, 0.2), spent("x", 3, 0.3)])
    drop_deltas(store)
    assert await store.spend_since(0) == pytest.approx(0.5 + 0.3)
    assert await store.spend_since(2) == pytest.approx(0.2 + 0.1)


async def test_old_running_totals_find_a_baseline_far_back(store: Store) -> None:
    # Many state changes between the last pre-window cost and the window.
    noise = [running("y", 5 + i / 1000) for i in range(250)]
    await store.append([starting("y", 1), spent("y", 2, 1.0), *noise, spent("y", 10, 1.5)])
    drop_deltas(store)
    assert await store.spend_since(9) == pytest.approx(0.5)


async def test_a_mixed_log_counts_each_turn_once(store: Store) -> None:
    await store.append([starting("z", 1), spent("z", 2, 0.2), spent("z", 3, 0.5)])
    drop_deltas(store)  # the first two were written by an older agentdeck
    await store.append([spent("z", 4, 0.9, 0.4)])
    assert await store.spend_since(0) == pytest.approx(0.9)
    assert await store.spend_since(3) == pytest.approx(0.3 + 0.4)
