"""The acting commands without a daemon go through the Deck embedded in the
command's process (``cli.decks.opened_deck``): what it does to agents another
process supervises (an ``agentdeck run`` in another terminal)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentdeck.cli.decks import is_remote, opened_deck
from agentdeck.core.agent import AgentState
from agentdeck.core.approvals import Approval, ApprovalState
from agentdeck.store import Store
from agentdeck.store.approvals import ApprovalStore
from tests.conftest import make_settings
from tests.store.conftest import make_agent

pytestmark = pytest.mark.anyio


@pytest.fixture
def other() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing for the ``agentdeck run`` that supervises an agent."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


async def test_an_answer_the_run_elsewhere_waits_for_is_not_kept_for_later(
    tmp_path: Path, other: subprocess.Popen[bytes]
) -> None:
    """The other process reads the answer from the store: the embedded Deck keeps no
    "while you were stopped" report for the agent's next resume (it did: the
    Deck knew only its own waiters)."""
    settings = make_settings(tmp_path)
    settings.ensure_home()
    await anyio.sleep(0.1)  # its start is before the row's (a reused pid would not be)
    store = Store.open(settings.db_path)
    try:
        now = time.time()
        await store.save_agent(
            make_agent(
                "a1aaaa", state=AgentState.AWAITING_PERMISSION, owner_pid=other.pid,
                created_at=now,
            )
        )  # fmt: skip
        await store.save_agent(make_agent("a2bbbb", state=AgentState.DONE, created_at=now))
        for approval_id, agent_id in (("ap1", "a1aaaa"), ("ap2", "a2bbbb")):
            await ApprovalStore(store).create(
                Approval(
                    id=approval_id, agent_id=agent_id, tool="Bash", input={"command": "make"},
                    reason="asked by rule", grant_key="Bash:make", state=ApprovalState.PENDING,
                    created_at=now, expires_at=now + 3600,
                )
            )  # fmt: skip
    finally:
        await store.close()
    async with opened_deck(settings) as deck:
        assert not is_remote(deck)
        answered = await deck.answer("ap1", "allow")
        assert answered.state is ApprovalState.ALLOWED
        assert "reports" not in (await deck.get_agent("a1aaaa")).extra
        # One that nobody runs is told when it is next resumed, as before.
        await deck.answer("ap2", "deny")
        (report,) = (await deck.get_agent("a2bbbb")).extra["reports"]
        assert report.startswith("While you were stopped, your earlier request to use Bash")
