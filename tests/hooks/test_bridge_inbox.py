"""A hand-started session's call the profile asks about, in the deck's approval
inbox: in process, a real Deck (store, governor, policy), payloads shaped as
Claude Code sends them. End to end with the real CLI: test_hand_governance_e2e."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.approvals import ApprovalState
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.governance.hand import MAX_ASK_INPUT
from agentdeck.hooks.protocol import HookReply, HookRequest
from agentdeck.settings import Settings
from tests.hooks.test_bridge import bash, decision, hook
from tests.runner.test_scrubbing import SECRETS_TXT, _database_texts, leaked
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio

WAIT = 30.0  # the inbox's deadline here: each test answers long before


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


async def opened(settings: Settings, **changes: Any) -> Deck:
    return await open_deck(settings.model_copy(update={"hook_approval_seconds": WAIT, **changes}))


@pytest.fixture
async def deck(settings: Settings) -> AsyncIterator[Deck]:
    deck = await opened(settings)
    try:
        yield deck
    finally:
        await deck.close()


async def pending(deck: Deck) -> Any:
    [approval] = await eventually(
        lambda: deck.approvals(states=[ApprovalState.PENDING]), what="a pending request"
    )
    return approval


class Told:
    """The socket server's ``pending`` callback: what the client was told."""

    def __init__(self, fails: bool = False) -> None:
        self.waits: list[float] = []
        self.fails = fails

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.fails:
            raise ConnectionResetError("the client went away")


def with_pending(request: HookRequest, told: Told) -> HookRequest:
    return HookRequest(request.event, request.env, pending=told)


async def test_the_client_is_told_how_long_the_person_has(deck: Deck, project: Path) -> None:
    told = Told()
    call = with_pending(hook("PreToolUse", project, **bash("git push")), told)
    waiting = asyncio.create_task(deck._hooks.handle(call))
    approval = await pending(deck)
    assert approval.tool == "Bash" and approval.input == {"command": "git push"}
    assert "Bash(git push:*)" in approval.reason
    await eventually(lambda: asyncio.sleep(0, told.waits), what="the client told")
    [wait] = told.waits
    assert 0 < wait <= WAIT
    [agent] = await deck.list_agents()
    assert (await deck.get_agent(agent.id)).state.value == "awaiting_permission"
    await deck.answer(approval.id, "allow", by="user:web")
    reply = await asyncio.wait_for(waiting, WAIT)
    assert decision(reply)["permissionDecision"] == "allow"
    assert (await deck.get_agent(agent.id)).state.value == "running"


async def test_a_session_waiting_on_the_inbox_still_gets_its_other_calls_judged(
    deck: Deck, project: Path
) -> None:
    """The wait holds no lock of the session: a parallel call that the profile
    denies is denied at once, not left to the client's short deadline (whose
    fallback passes it to Claude Code)."""
    first = asyncio.create_task(deck._hooks.handle(hook("PreToolUse", project, **bash("git push"))))
    approval = await pending(deck)
    second = hook("PreToolUse", project, **bash("sudo rm -rf /", "toolu_2"))
    denied = await asyncio.wait_for(deck._hooks.handle(second), WAIT / 2)
    assert decision(denied)["permissionDecision"] == "deny"
    assert not first.done()
    await deck.answer(approval.id, "deny", by="user:cli", message="not today")
    reply = decision(await asyncio.wait_for(first, WAIT))
    assert reply["permissionDecision"] == "deny"
    assert reply["permissionDecisionReason"] == "agentdeck: not today"


async def test_a_client_that_went_away_cancels_its_request(deck: Deck, project: Path) -> None:
    call = with_pending(hook("PreToolUse", project, **bash("git push")), Told(fails=True))
    assert await asyncio.wait_for(deck._hooks.handle(call), WAIT / 2) == HookReply()
    [approval] = await deck.approvals()
    assert approval.state is ApprovalState.CANCELLED
    # The audit log says it was closed, not left at "ask".
    trail = [(r.tool, str(r.decision), r.answered_by) for r in await deck._store.read_audit()]
    assert trail == [("Bash", "ask", "hook"), ("Bash", "cancelled", "hook")]


async def test_a_call_too_large_for_the_inbox_is_claude_codes_to_ask_at_once(
    deck: Deck, project: Path
) -> None:
    command = "git push origin " + "x" * MAX_ASK_INPUT
    reply = await asyncio.wait_for(
        deck._hooks.handle(hook("PreToolUse", project, **bash(command))), WAIT / 2
    )
    out = decision(reply)
    assert out["permissionDecision"] == "ask"
    assert "too large to put in the approval inbox" in out["permissionDecisionReason"]
    assert await deck.approvals() == []
    [agent] = await deck.list_agents()
    [resolved] = [
        e for e in await deck.events(agent_id=agent.id) if e.type == "permission_resolved"
    ]
    assert resolved.data["decision"] == "ask"


async def test_what_the_inbox_and_the_log_keep_of_an_asked_call_is_scrubbed(
    project: Path, settings: Settings, tmp_path: Path
) -> None:
    """The model writes the command: the person deciding sees it redacted, the
    store keeps it redacted, and the answer still applies to the real call."""
    profile = tmp_path / "asks.yaml"  # the shipped ones deny some of the corpus outright
    profile.write_text(yaml.safe_dump({"name": "asks", "ask": ["Bash(git push:*)"]}))
    deck = await opened(settings, profile=str(profile))
    try:
        command = "git push " + shlex.quote(SECRETS_TXT)
        waiting = asyncio.create_task(
            deck._hooks.handle(hook("PreToolUse", project, **bash(command)))
        )
        approval = await pending(deck)
        assert "[REDACTED:" in approval.input["command"]
        assert leaked(json.dumps(approval.input)) == [] and leaked(approval.reason) == []
        await deck.answer(approval.id, "deny", by="user:web")
        assert decision(await asyncio.wait_for(waiting, WAIT))["permissionDecision"] == "deny"
        [agent] = await deck.list_agents()
        events = json.dumps([e.data for e in await deck.events(agent_id=agent.id)])
        assert "permission_requested" in {e.type for e in await deck.events(agent_id=agent.id)}
        assert leaked(events) == []
        audit = json.dumps([e.reason for e in await deck._store.read_audit(limit=10)])
        assert leaked(audit) == []
    finally:
        await deck.close()
    assert leaked("\n".join(_database_texts(settings.db_path))) == []


async def test_full_governance_applies_the_whole_profile(settings: Settings, project: Path) -> None:
    deck = await opened(settings, hook_governance="full")
    try:
        allowed = await deck._hooks.handle(hook("PreToolUse", project, **bash("ls -la")))
        assert decision(allowed)["permissionDecision"] == "allow"  # the profile's allow rule
        # No rule: the profile's default (ask) puts it in the inbox.
        waiting = asyncio.create_task(
            deck._hooks.handle(hook("PreToolUse", project, **bash("make", "toolu_2")))
        )
        approval = await pending(deck)
        assert "defaults to ask" in approval.reason
        await deck.answer(approval.id, "allow", by="user:cli")
        assert decision(await asyncio.wait_for(waiting, WAIT))["permissionDecision"] == "allow"
    finally:
        await deck.close()
