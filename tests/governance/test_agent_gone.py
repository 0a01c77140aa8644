"""An asked call whose agent goes away before the answer: closed, and audited so.

It was left pending in the inbox, and the audit log ended at "ask": nobody could
tell from it that the call never ran.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.core.events import EventType
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.support.governance import ask_profile_and_scenario
from tests.support.served import serving
from tests.support.waiting import eventually, wait_event

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_a_killed_agents_pending_request_is_cancelled_and_audited(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    profile, scenario = ask_profile_and_scenario(tmp_path)
    session = await runner.start(AgentSpec(prompt="make it", scenario=scenario, profile=profile))
    await wait_event(store, session.agent.id, EventType.PERMISSION_REQUESTED)

    await session.kill()

    async def closed() -> Approval | None:  # the SDK cancels the wait once it closes
        (approval,) = await runner.governor.approvals.list_approvals(states=None)
        audited = len(await store.read_audit()) == 2
        return approval if approval.state != ApprovalState.PENDING and audited else None

    approval = await eventually(closed, timeout=30, what="the request closed and audited")
    assert approval.state == ApprovalState.CANCELLED and approval.answered_by == "agentdeck"
    trail = [(r.tool, str(r.decision), r.answered_by) for r in await store.read_audit()]
    assert trail == [("Bash", "ask", "policy"), ("Bash", "cancelled", "agentdeck")]
    assert not (Path(session.agent.cwd) / "made.txt").exists()


async def test_a_daemon_stopping_with_a_request_pending_logs_no_traceback(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK cancels the wait only once the store is closed: the request is left
    pending (it expires as any does), in one line, not a traceback."""
    profile, scenario = ask_profile_and_scenario(tmp_path)
    spec = AgentSpec(prompt="make it", scenario=scenario, profile=profile)
    with caplog.at_level(logging.INFO):
        async with serving(settings) as served:
            session = await served.deck._runner.start(spec, keep_alive=True)
            await wait_event(served.deck._store, session.agent.id, EventType.PERMISSION_REQUESTED)
    governor = [r for r in caplog.records if r.name == "agentdeck.governance.governor"]
    assert not [r for r in governor if r.exc_info], [r.getMessage() for r in governor]
