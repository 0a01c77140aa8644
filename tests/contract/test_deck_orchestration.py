"""Orchestrating from outside through both implementations of the Deck interface:
a hand-started Claude Code session's agent, and the orchestrator's tools called as
it (what ``agentdeck mcp --orchestrate`` does). Spawning through these tools with a
real session is ``tests/orchestration/test_daemon_e2e.py``'s."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSource, AgentSpec, AgentState
from agentdeck.core.deck import Deck
from agentdeck.errors import NotFound, UsageError
from tests.contract.helpers import idle_after, settled, unique

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_a_session_gets_one_agent_and_calls_the_tools_as_it(
    deck: Deck, tmp_path: Path
) -> None:
    session = str(uuid.uuid4())
    outside = await deck.external_agent(session, str(tmp_path), None)
    assert outside.source is AgentSource.EXTERNAL and outside.session_id == session
    assert outside.parent_id is None and outside.state is AgentState.RUNNING
    again = await deck.external_agent(session, str(tmp_path), None)
    assert again.id == outside.id  # one agent per session, ever

    text, failed = await deck.call_deck_tool(outside.id, "list_agents", {})
    assert (text, failed) == ("You have no child agents yet. Start one with spawn_agent.", False)
    # A tool's own refusal is its answer (failed), not an error of the deck.
    text, failed = await deck.call_deck_tool(outside.id, "read_transcript", {"agent": "nobody"})
    assert failed and "nobody" in text, text


async def test_the_tools_are_a_hand_started_sessions_only(deck: Deck, tmp_path: Path) -> None:
    outside = await deck.external_agent(str(uuid.uuid4()), str(tmp_path), None)
    with pytest.raises(NotFound) as unknown:
        await deck.call_deck_tool(outside.id, "rm_rf", {})
    assert unknown.value.kind == "deck tool"
    for hostile in ("../list_agents", "list_agents/../../x", "list_agents?x=1", ""):
        with pytest.raises(NotFound):
            await deck.call_deck_tool(outside.id, hostile, {})
    with pytest.raises(NotFound):
        await deck.call_deck_tool("no-such-agent", "list_agents", {})

    own = await deck.create_agent(AgentSpec(prompt="hello", name=unique("own"), scenario="chat"))
    await settled(deck, own.id, idle_after(1))
    with pytest.raises(UsageError):  # an agent agentdeck runs has its tools in its process
        await deck.call_deck_tool(own.id, "list_agents", {})
    await deck.kill(own.id)

    with pytest.raises(UsageError):
        await deck.external_agent("", str(tmp_path), None)
