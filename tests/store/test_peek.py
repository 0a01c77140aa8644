"""``store.peek``: the standard library's read-only look sees what the store sees,
finds agents by the same rule, and declines (None) what it must not touch."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.asks import AskKind, AskState
from agentdeck.errors import NotFound, UsageError
from agentdeck.store import Store
from agentdeck.store.approvals import SAID as approvals_said
from agentdeck.store.approvals import ApprovalStore
from agentdeck.store.asks import SAID as asks_said
from agentdeck.store.asks import AskStore
from agentdeck.store.merges import SAID as merges_said
from agentdeck.store.notify import SAID as notify_said
from agentdeck.store.peek import SAID, Peek
from tests.runner.test_scrubbing import SECRETS_TXT, leaked

from .conftest import make_agent, text
from .test_asks_and_tree import ask

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.sqlite_only("the quick path reads the SQLite file with sqlite3"),
]


def approval(approval_id: str, state: ApprovalState, at: float) -> Approval:
    return Approval(
        id=approval_id, agent_id="a1aaaa", tool="Bash", input={"command": "rm -rf build"},
        reason="asked by rule", grant_key="Bash:rm", state=state, created_at=at,
        expires_at=at + 60,
    )  # fmt: skip


async def fill(store: Store) -> None:
    await store.save_agent(make_agent("a1aaaa", name="lead", created_at=1000.0))
    await store.save_agent(make_agent("a1aabb", name="twin", created_at=1001.0, parent_id="a1aaaa"))
    await store.save_agent(
        make_agent("a2cccc", name="twin", state=AgentState.DONE, created_at=1002.0,
                   parent_id="a1aabb", extra={"sandbox": "process"})
    )  # fmt: skip
    await store.save_agent(make_agent("a3dddd", name="old", created_at=999.0))
    await store.set_archived("a3dddd")
    await store.append([text("a1aaaa", n) for n in range(5)])
    now = time.time()
    for i, state in enumerate([ApprovalState.PENDING, ApprovalState.ALLOWED]):
        await ApprovalStore(store).create(approval(f"ap{i}", state, now + i))
    asks = AskStore(store)
    await asks.create(ask("ak1", "a1aabb", at=now))
    await asks.create(ask("ak2", "a1aabb", kind=AskKind.NOTE, at=now + 1))
    await asks.create(ask("ak3", "a2cccc", at=now + 2))
    await asks.decide("ak3", AskState.ANSWERED, by="user:cli", answer="yes")


async def test_a_peek_reads_what_the_store_reads(store: Store, db_path: Path) -> None:
    await fill(store)
    with Peek.open(db_path) as db:  # type: ignore[union-attr]
        assert db.agents(limit=50) == await store.list_agents(limit=50)
        assert db.agents(states=["done"], limit=5) == await store.list_agents(
            states=[AgentState.DONE], limit=5
        )
        assert db.agents(limit=50, roots=True) == await store.list_agents(limit=50, roots=True)
        assert db.children(["a1aaaa"]) == await store.children(["a1aaaa"])
        assert db.descendants(["a1aaaa"]) == await store.descendants(["a1aaaa"])
        assert db.events("a1aaaa", after=2) == await store.read(agent_id="a1aaaa", after=2)
        for states in (["pending"], None):
            wanted = [ApprovalState(s) for s in states] if states else None
            assert db.approvals(states) == await ApprovalStore(store).list_approvals(states=wanted)
        assert db.asks(["pending"]) == await AskStore(store).list_asks()
        assert db.asks(None) == await AskStore(store).list_asks(states=[*AskState])
        assert db.find_agent("a2cccc").extra == {"sandbox": "process"}


async def test_an_agent_is_found_by_the_stores_rule(store: Store, db_path: Path) -> None:
    await fill(store)
    with Peek.open(db_path) as db:  # type: ignore[union-attr]
        for ref in ("a1aaaa", "a2cc", "lead", "old"):
            assert db.find_agent(ref) == await store.find_agent(ref)
        for ref, error in (("a1aa", UsageError), ("twin", UsageError), ("nope", NotFound),
                           ("a1a%", NotFound), ("a_aa", NotFound)):  # fmt: skip
            with pytest.raises(error) as peeked:
                db.find_agent(ref)
            with pytest.raises(error) as stored:
                await store.find_agent(ref)
            assert peeked.value.message == stored.value.message


async def test_a_peek_declines_what_it_must_not_touch(tmp_path: Path, db_path: Path) -> None:
    assert Peek.open(tmp_path / "missing.db") is None
    assert not (tmp_path / "missing.db").exists()
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 10)
    assert Peek.open(tmp_path / "junk.db") is None
    store = Store.open(db_path)
    await store.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    assert Peek.open(db_path) is None  # an older schema: the store migrates it first


async def test_a_peek_never_writes(store: Store, db_path: Path) -> None:
    await fill(store)
    db = Peek.open(db_path)
    assert db is not None
    with db, pytest.raises(sqlite3.OperationalError, match="readonly"):
        db._conn.execute("DELETE FROM agents")
    assert len(await store.list_agents(limit=50)) == 3


async def test_a_peek_shows_rows_an_older_version_wrote_raw_scrubbed_as_the_store_does(
    store: Store, db_path: Path
) -> None:
    await fill(store)
    raw = json.dumps({"command": SECRETS_TXT})
    with sqlite3.connect(db_path) as conn:  # as a version that did not scrub wrote them
        conn.execute("UPDATE approvals SET input = ?, reason = ?, message = ?",
                     (raw, SECRETS_TXT, SECRETS_TXT))  # fmt: skip
        conn.execute("UPDATE asks SET text = ?, answer = ?", (SECRETS_TXT, SECRETS_TXT))
    with Peek.open(db_path) as db:  # type: ignore[union-attr]
        approvals, asks = db.approvals(None), db.asks(None)
    assert approvals == await ApprovalStore(store).list_approvals(states=None)
    assert asks == await AskStore(store).list_asks(states=[*AskState])
    shown = json.dumps([a.to_dict() for a in approvals] + [a.to_dict() for a in asks])
    assert shown.count("[REDACTED:") > 100 and leaked(shown) == []
    assert {
        "approvals": approvals_said,
        "asks": asks_said,
        "merges": merges_said,
        "notify_dead": notify_said,
    } == SAID
