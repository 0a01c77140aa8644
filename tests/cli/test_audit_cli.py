"""``agentdeck audit verify / ls``, run as a user would: a real subprocess."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agentdeck.core.audit import AuditDecision, AuditRecord
from agentdeck.store import Store
from tests.support.deckcli import deck, deck_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


def fill(tmp_path: Path, n: int) -> Path:
    db = tmp_path / "home" / "agentdeck.db"

    async def go() -> None:
        store = Store.open(db)
        try:
            for i in range(n):
                await store.append_audit(
                    AuditRecord.for_input(
                        agent_id="a-one" if i % 2 else "a-two",
                        tool="Bash",
                        tool_input={"command": f"rm -rf /tmp/x{i}"},
                        decision=AuditDecision.DENY if i % 2 else AuditDecision.ALLOWED,
                        reason=f"reason {i}",
                        rule="Bash(rm *)" if i % 2 else None,
                        answered_by="policy" if i % 2 else "user:cli",
                        ts=1_767_225_600.0 + i,  # 2026-01-01 00:00:00 UTC
                    )
                )
        finally:
            await store.close()

    asyncio.run(go())
    return db


def test_verify_an_intact_log_exits_0(env: dict[str, str], tmp_path: Path) -> None:
    fill(tmp_path, 12)
    done = deck(env, "audit", "verify")
    assert done.code == 0, done.err
    assert done.out.strip() == "audit log intact: 12 entries"
    data = deck(env, "audit", "verify", "--json").json()
    assert data["ok"] is True and data["count"] == 12 and len(data["head"]) == 64


def test_verify_an_empty_log(env: dict[str, str]) -> None:
    done = deck(env, "audit", "verify")
    assert (done.code, done.out.strip()) == (0, "audit log intact: 0 entries")


def test_verify_a_tampered_log_exits_1_naming_the_entry(
    env: dict[str, str], tmp_path: Path
) -> None:
    db = fill(tmp_path, 12)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE audit SET decision = 'allow' WHERE id = 6")
    conn.close()
    done = deck(env, "audit", "verify")
    assert done.code == 1
    assert done.out.strip().startswith("audit log broken at entry 6: entry 6 was edited")
    as_json = deck(env, "audit", "verify", "--json")
    assert as_json.code == 1
    assert as_json.json() | {"head": None} == {
        "ok": False,
        "count": 5,
        "head": None,
        "entry_id": 6,
        "problem": "edited",
        "message": "entry 6 was edited: its content does not match its hash",
    }


def test_verify_reports_a_deleted_entry(env: dict[str, str], tmp_path: Path) -> None:
    db = fill(tmp_path, 5)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM audit WHERE id = 3")
    conn.close()
    done = deck(env, "audit", "verify")
    assert done.code == 1
    assert "broken at entry 3: entry 3 is missing" in done.out


def test_ls_lists_the_newest_entries(env: dict[str, str], tmp_path: Path) -> None:
    fill(tmp_path, 12)
    listed = deck(env, "audit", "ls", "--limit", "3", "--json").json()
    assert [e["id"] for e in listed] == [10, 11, 12]
    assert [(e["decision"], e["answered_by"]) for e in listed[-2:]] == [
        ("allowed", "user:cli"),
        ("deny", "policy"),
    ]
    mine = deck(env, "audit", "ls", "--agent", "a-one", "--json").json()
    assert len(mine) == 6 and {e["agent_id"] for e in mine} == {"a-one"}
    table = deck(env, "audit", "ls", "--limit", "2")
    assert table.code == 0, table.err
    assert "2026-01-01 00:00:10" in table.out and "Bash(rm *)" in table.out
    assert "denied" not in table.out and "allowed" in table.out and "deny" in table.out


def test_ls_on_an_empty_log(env: dict[str, str]) -> None:
    done = deck(env, "audit", "ls")
    assert (done.code, done.out.strip()) == (0, "no audit entries yet")


def test_ls_refuses_a_bad_limit(env: dict[str, str]) -> None:
    assert deck(env, "audit", "ls", "--limit", "0").code == 2
