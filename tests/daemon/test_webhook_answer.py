"""A signed webhook delivery is answered 202 once its agent exists, not after its
Claude Code has booted (U1's benchmark: 6.7 to 7.0 s at p50 under load, against
GitHub's 10 s timeout): the agent is ``starting`` when the sender hears, and goes on
to run its turn."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.triggers import Trigger, fingerprint, sign
from agentdeck.daemon.compose import open_deck
from agentdeck.store.triggers import TriggerStore
from tests.conftest import make_settings
from tests.contract.helpers import settled

pytestmark = pytest.mark.anyio

SECRET = b"webhook-answer-secret-0123456789"


async def test_a_delivery_is_answered_while_its_agent_starts(tmp_path: Path) -> None:
    secret = tmp_path / "hook.secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    project = tmp_path / "project"
    project.mkdir()
    deck = await open_deck(make_settings(tmp_path))
    try:
        await TriggerStore(deck._store).add(
            Trigger(
                "pr", "reviewer", str(project), "Review {{ payload.number }}", str(secret),
                fingerprint(SECRET), 600, time.time(), "admin", "chat",
            )
        )  # fmt: skip
        body = json.dumps({"number": 7}).encode()
        answer = await deck.receive_webhook(
            "pr", body, signature=sign(SECRET, body), delivery="d1", event="pull_request"
        )
        assert answer.status == 202 and answer.agent_id, answer
        heard = await deck.get_agent(answer.agent_id)
        assert heard.state is AgentState.STARTING and heard.pid is None  # not booted yet
        done = await settled(deck, answer.agent_id, lambda a: a.turns >= 1)
        assert done.spec.prompt == "Review 7"
    finally:
        await deck.close()
