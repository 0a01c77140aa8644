"""Grants are read on every tool call, so each process holds them in memory; a grant
another process adds is seen at its next call all the same (the stamp beside the
database), and a copy is never trusted past ``GRANTS_MAX_AGE``."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from agentdeck.core.approvals import Approval, ApprovalState, GrantScope
from agentdeck.store import Store
from agentdeck.store import approvals as approvals_module
from agentdeck.store.approvals import ApprovalStore

pytestmark = pytest.mark.anyio

KEY = "profile:default"

ANSWER = """
import asyncio, sys
from pathlib import Path
from agentdeck.core.approvals import ApprovalState, GrantScope
from agentdeck.store import Store
from agentdeck.store.approvals import ApprovalStore

async def main(db: str, approval_id: str) -> None:
    store = Store.open(Path(db))
    try:
        answered = await ApprovalStore(store).decide(
            approval_id, ApprovalState.ALLOWED, by="user:other",
            remember=GrantScope.PERSISTENT, grant_rule="Bash(deploy:*)",
        )
        assert answered is not None
    finally:
        await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def pending(approval_id: str) -> Approval:
    now = time.time()
    return Approval(
        id=approval_id,
        agent_id="a1",
        tool="Bash",
        input={"command": "deploy now"},
        reason="no rule allows it",
        grant_key=KEY,
        state=ApprovalState.PENDING,
        created_at=now,
        expires_at=now + 60,
    )


async def test_a_grant_another_process_adds_is_seen_at_the_next_call(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        held = ApprovalStore(store)
        await held.create(pending("ap1"))
        assert await held.grants_for(KEY, "a1") == []  # read, and now held
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ANSWER, str(db_path), "ap1",
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(child.communicate(), 60)
        assert child.returncode == 0, err.decode()
        (grant,) = await held.grants_for(KEY, "a1")
        assert (grant.rule, grant.decision, grant.created_by) == (
            "Bash(deploy:*)", "allow", "user:other",
        )  # fmt: skip
    finally:
        await store.close()


async def test_a_grant_this_process_adds_is_seen_at_once(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        held = ApprovalStore(store)
        await held.create(pending("ap1"))
        assert await held.grants_for(KEY, "a1") == []
        await held.decide(
            "ap1", ApprovalState.DENIED, by="user:me",
            remember=GrantScope.SESSION, grant_rule="Bash(deploy:*)",
        )  # fmt: skip
        (grant,) = await held.grants_for(KEY, "a1")
        assert (grant.decision, grant.agent_id) == ("deny", "a1")
        assert await held.grants_for(KEY, "a2") == []  # a session grant is its agent's
    finally:
        await store.close()


async def test_grants_are_held_and_never_trusted_past_their_age(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grant written behind the stamp's back (a writer that died between its
    commit and its stamp) is not seen from memory, but is once the copy is old."""
    store = Store.open(db_path)
    try:
        held = ApprovalStore(store)
        assert await held.grants_for(KEY, "a1") == []
        conn = sqlite3.connect(db_path)
        with conn:
            conn.execute(
                "INSERT INTO grants (grant_key, rule, decision, scope, agent_id, created_at)"
                " VALUES (?, 'Bash(rm:*)', 'deny', 'persistent', NULL, ?)",
                (KEY, time.time()),
            )
        conn.close()
        assert await held.grants_for(KEY, "a1") == []  # from memory: no read
        monkeypatch.setattr(approvals_module, "GRANTS_MAX_AGE", 0.0)
        (grant,) = await held.grants_for(KEY, "a1")
        assert (grant.rule, grant.decision) == ("Bash(rm:*)", "deny")
    finally:
        await store.close()


async def test_a_stamp_that_cannot_be_written_is_said_and_this_process_reads_again(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(db_path)
    try:
        held = ApprovalStore(store)
        await held.create(pending("ap1"))
        assert await held.grants_for(KEY, "a1") == []
        stamp = Path(f"{db_path}.grants")
        stamp.mkdir()  # a directory where the file goes: the replace fails
        answered = await held.decide(
            "ap1", ApprovalState.ALLOWED, by="user:me",
            remember=GrantScope.PERSISTENT, grant_rule="Bash(deploy:*)",
        )  # fmt: skip
        assert answered is not None and answered.state == ApprovalState.ALLOWED
        assert f"could not write {stamp}" in caplog.text
        assert [g.rule for g in await held.grants_for(KEY, "a1")] == ["Bash(deploy:*)"]
        assert [p.name for p in db_path.parent.iterdir() if ".tmp" in p.name] == []
        stamp.rmdir()
        await held.create(pending("ap2"))
        await held.decide(
            "ap2", ApprovalState.ALLOWED, by="user:me",
            remember=GrantScope.PERSISTENT, grant_rule="Bash(ship:*)",
        )  # fmt: skip
        assert stamp.stat().st_mode & 0o777 == 0o600
    finally:
        await store.close()
