"""Model API faults end as documented, within deadlines (driven through the runner)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


def scenario_with(tmp_path: Path, *faults: dict[str, Any]) -> str:
    path = tmp_path / "faulty.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "faulty",
                "turns": [{"reply": [{"text": "recovered fine"}]}],
                "faults": list(faults),
            }
        )
    )
    return str(path)


async def run_to_end(
    store: Store, runner: Runner, scenario: str, deadline: float
) -> tuple[AgentState, dict[str, Any], float]:
    started = time.monotonic()
    session = await runner.start(AgentSpec(prompt="hi", scenario=scenario))
    await session.wait_finished(timeout=deadline)
    elapsed = time.monotonic() - started
    events = await store.read(agent_id=session.agent.id)
    turn = next(e.data for e in events if e.type == EventType.TURN_COMPLETED)
    return session.agent.state, turn, elapsed


async def test_429_then_success(deck: tuple[Store, Runner], tmp_path: Path) -> None:
    store, runner = deck
    scenario = scenario_with(tmp_path, {"on_request": 1, "http_status": 429, "retry_after": 0})
    state, turn, _ = await run_to_end(store, runner, scenario, 60)
    assert state == AgentState.DONE and turn["result"] == "recovered fine"
    (agent,) = await store.list_agents()
    notices = [e.data for e in await store.read(agent_id=agent.id) if e.type == EventType.NOTICE]
    assert any(n["kind"] == "api_retry" and n["detail"]["error_status"] == 429 for n in notices)


async def test_persistent_500_ends_in_error_quickly(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    scenario = scenario_with(tmp_path, {"on_request": 1, "always": True, "http_status": 500})
    state, turn, elapsed = await run_to_end(store, runner, scenario, 60)
    assert state == AgentState.ERROR
    assert turn["is_error"] and turn["terminal_reason"] == "api_error"
    assert turn["api_error_status"] == 500
    (agent,) = await store.list_agents()
    assert agent.last_error and "500" in agent.last_error
    assert elapsed < 30  # bounded retries, not Claude Code's default minutes


async def test_malformed_sse_once_recovers(deck: tuple[Store, Runner], tmp_path: Path) -> None:
    store, runner = deck
    scenario = scenario_with(tmp_path, {"on_request": 1, "malformed_sse": True})
    state, turn, _ = await run_to_end(store, runner, scenario, 60)
    assert state == AgentState.DONE and turn["result"] == "recovered fine"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.api_timeout_seconds = 2.0
    return settings


async def test_a_hanging_model_ends_in_error_within_the_deadline(
    deck: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = deck
    scenario = scenario_with(tmp_path, {"on_request": 1, "always": True, "hang": True})
    state, turn, elapsed = await run_to_end(store, runner, scenario, 60)
    assert state == AgentState.ERROR
    assert turn["is_error"] and turn["terminal_reason"] == "api_error"
    assert "timed out" in (turn["result"] or "").lower()
    assert elapsed < 40


async def test_an_unreachable_endpoint_fails_in_seconds(
    deck: tuple[Store, Runner],
) -> None:
    store, runner = deck
    runner.settings.anthropic_base_url = "http://127.0.0.1:9"  # discard port: nothing listens
    runner.settings.anthropic_api_key = SecretStr("sk-test-not-a-real-key")
    started = time.monotonic()
    session = await runner.start(AgentSpec(prompt="hi"))
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.ERROR
    assert time.monotonic() - started < 30
    errors = [
        e.data
        for e in await store.read(agent_id=session.agent.id)
        if e.type in (EventType.ERROR_OCCURRED, EventType.TURN_COMPLETED)
    ]
    assert any("connection" in str(e).lower() for e in errors)
    assert "sk-test-not-a-real-key" not in str(await store.read(limit=100_000))


async def test_no_credentials_fail_with_a_clear_message(deck: tuple[Store, Runner]) -> None:
    store, runner = deck
    runner.settings.anthropic_base_url = "http://127.0.0.1:9"
    runner.settings.anthropic_api_key = None
    runner.settings.claude_code_oauth_token = None
    session = await runner.start(AgentSpec(prompt="hi"))
    await session.wait_finished(timeout=60)
    assert session.agent.state == AgentState.ERROR
    assert session.agent.last_error == "Not logged in · Please run /login"
