"""AGENTDECK_MAX_LIVE_AGENTS holds for agents created at once: each creation is
counted from its check until its session is registered (before, every creation
under way passed the check before any counted: benchmarks/schedules.py
--triggers-per-second 100 saw 13 live of 8)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.daemon.compose import open_deck
from agentdeck.errors import Refused
from tests.conftest import make_settings

pytestmark = pytest.mark.anyio


async def test_agents_created_at_once_never_pass_the_live_limit(tmp_path: Path) -> None:
    deck = await open_deck(make_settings(tmp_path, max_live_agents=2))
    try:
        spec = AgentSpec(prompt="hello", scenario="chat")
        results = await asyncio.gather(
            *(deck.create_agent(spec) for _ in range(5)), return_exceptions=True
        )
        started = [r for r in results if not isinstance(r, BaseException)]
        refused = [r for r in results if isinstance(r, Refused)]
        assert len(started) == 2 and len(refused) == 3, results
        assert "AGENTDECK_MAX_LIVE_AGENTS=2" in str(refused[0])
        assert deck._runner.live_count() == 2
        for agent in started:
            await deck.kill(agent.id)
    finally:
        await deck.close()
    assert deck._runner._starting == {}  # nothing left counted
