"""A decision the policy makes alone is answered without waiting for its audit entry's
commit: the entry is queued first, so it is in the chain before any write that comes
after the answer (the call's own events), and the chain verifies. A store that cannot
take it is one error line naming the call; the decision stands."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import AssistantText
from agentdeck.governance.governor import Governor
from agentdeck.settings import Settings
from agentdeck.store import Store

pytestmark = pytest.mark.anyio


async def waiting_noop(_: bool) -> None:
    """No approval request is opened by these calls: nothing to show."""


def agent(tmp_path: Path) -> Agent:
    now = time.time()
    return Agent(
        id="a1", name="one", state=AgentState.RUNNING,
        spec=AgentSpec(prompt="go", cwd=str(tmp_path)),
        cwd=str(tmp_path), created_at=now, updated_at=now,
    )  # fmt: skip


def settings(tmp_path: Path) -> Settings:
    made = Settings(home=tmp_path / "home", claude_config_dir=tmp_path / "claude")
    made.ensure_home()
    return made


async def test_an_entry_is_in_the_chain_before_any_write_after_the_answer(
    tmp_path: Path,
) -> None:
    config = settings(tmp_path)
    store = Store.open(config.db_path)
    try:
        governor = Governor(store, config)
        one = agent(tmp_path)
        read = await governor.authorize(
            one, "Read", {"file_path": str(tmp_path / "x")}, "t1", waiting=waiting_noop
        )
        denied = await governor.authorize(
            one, "Bash", {"command": "rm -rf /"}, "t2", waiting=waiting_noop
        )
        assert read.allowed and not denied.allowed
        (stored,) = await store.append([AssistantText(agent_id="a1", ts=time.time(), text="x")])
        entries = await store.read_audit()
        assert [(e.tool, e.decision) for e in entries] == [("Read", "allow"), ("Bash", "deny")]
        assert all(e.ts <= stored.ts for e in entries)
        assert (await store.verify_audit()).ok
    finally:
        await store.close()


async def test_a_store_that_cannot_take_the_entry_is_one_line_and_the_decision_stands(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = settings(tmp_path)
    store = Store.open(config.db_path)
    governor = Governor(store, config)
    one = agent(tmp_path)
    await governor.grants(one)  # held: the closed store is met only by the audit
    await store.close()
    with caplog.at_level(logging.ERROR):
        outcome = await governor.authorize(
            one, "Read", {"file_path": str(tmp_path / "x")}, "t1", waiting=waiting_noop
        )
    assert outcome.allowed
    lines = [r for r in caplog.records if "audit log" in r.getMessage()]
    assert [r.getMessage() for r in lines] == [
        "could not append to the audit log (Read allow): "
        "the store is closed (open it again to write)"
    ]
    assert lines[0].exc_info is None
