"""A deck with runner hosts, in one process: a new agent waits ``queued`` until
the host claims it, then runs; a queued agent killed before a host took it never
starts; a host that fits nothing leaves it queued."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.runner import steering
from agentdeck.store.hosts import HostStore
from tests.conftest import make_settings
from tests.contract.helpers import settled

pytestmark = pytest.mark.anyio


@pytest.fixture
async def cluster_deck(tmp_path: Path, pg_url: str) -> AsyncIterator[Deck]:
    settings = make_settings(tmp_path, database_url=pg_url, runner_poll_seconds=0.2)
    deck = await open_deck(settings)
    try:
        yield deck
    finally:
        await deck.close()
        steering.set_this_host(None)


async def test_an_agent_waits_queued_until_a_host_claims_it_then_runs(
    cluster_deck: Deck, tmp_path: Path
) -> None:
    deck = cluster_deck
    assert deck.queueing
    agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
    assert agent.state is AgentState.QUEUED
    assert (await deck.get_agent(agent.id)).state is AgentState.QUEUED
    host = deck.host_of_settings(name="h1", capacity=2)
    serving = await deck.serve_as_host(host)
    done = await settled(deck, agent.id, lambda a: a.state is AgentState.IDLE)
    assert done.extra["host"] == "h1" and done.turns == 1
    assert [x.agent_id for x in await serving.hosts.leases("h1")] == [agent.id]
    events = [e.type for e in await deck.events(agent_id=agent.id)]
    assert events[:2] == ["agent_spawned", "state_changed"]
    assert "notice" in events


async def test_a_queued_agent_killed_before_any_host_took_it_never_starts(
    cluster_deck: Deck,
) -> None:
    deck = cluster_deck
    agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
    killed = await deck.kill(agent.id)
    assert killed.state is AgentState.KILLED
    serving = await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=2))
    assert await serving.claim_now() == []
    assert (await deck.get_agent(agent.id)).state is AgentState.KILLED
    assert await HostStore(serving.store).leases() == []


async def test_a_host_without_the_labels_leaves_it_queued(cluster_deck: Deck) -> None:
    deck = cluster_deck
    agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat", labels=("gpu",)))
    serving = await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=2))
    assert await serving.claim_now() == []
    assert (await deck.get_agent(agent.id)).state is AgentState.QUEUED


async def test_the_host_keeps_the_transcript_in_the_database_at_a_turns_end(
    cluster_deck: Deck,
) -> None:
    from agentdeck.store.transcripts import TranscriptStore
    from tests.support.waiting import eventually

    deck = cluster_deck
    agent = await deck.create_agent(AgentSpec(prompt="hello", scenario="chat"))
    serving = await deck.serve_as_host(deck.host_of_settings(name="h1", capacity=2))
    done = await settled(deck, agent.id, lambda a: a.state is AgentState.IDLE)

    async def kept() -> tuple[str, str] | None:
        return await TranscriptStore(serving.store).load(agent.id)

    session_id, text = await eventually(kept, timeout=30, what="the transcript kept")
    assert session_id == done.session_id
    assert '"hello"' in text or "hello" in text
