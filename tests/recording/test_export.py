"""``scenario export``: a recorded run played offline by the scripted model gives the
same tool calls, the same files and the same final text."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.core.events import EventType
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import UsageError
from agentdeck.mockmodel import load_scenario, parse_scenario
from agentdeck.runner.recording.export import scenario_of
from agentdeck.runner.recording.store import Recordings
from agentdeck.runner.runner import Runner
from agentdeck.store.store import Store
from tests.conftest import make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[tuple[Store, Runner]]:
    settings = make_settings(tmp_path)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        yield store, runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


async def _played(store: Store, runner: Runner, spec: AgentSpec) -> tuple[Any, list[Any], str]:
    session = await runner.start(spec)
    await session.wait_finished(timeout=90)
    agent = await store.get_agent(session.agent.id)
    assert agent.state == AgentState.DONE, agent.last_error
    events = await store.read(agent_id=agent.id)
    calls = [(e.data["tool"], e.data["input"]) for e in events if e.type == EventType.TOOL_CALLED]
    (turn,) = [e for e in events if e.type == EventType.TURN_COMPLETED]
    return agent, calls, turn.data["result"]


def _seen(calls: list[Any], cwd: str) -> list[tuple[str, str]]:
    """Each call with its workspace's path named WS (the two runs have their own)."""
    return [(name, json.dumps(given, sort_keys=True).replace(cwd, "WS")) for name, given in calls]


async def test_an_exported_run_plays_offline_the_same(
    opened: tuple[Store, Runner], tmp_path: Path
) -> None:
    store, runner = opened
    recorded, calls, final = await _played(
        store, runner, AgentSpec(prompt="tidy the notes", scenario="demo", record=True)
    )
    records = Recordings.of(runner.settings).records(recorded.id)
    data = scenario_of(records, "replayed")
    scenario = parse_scenario(data, "<export>")
    assert len(scenario.turns) == len(load_scenario("demo").turns)
    file = tmp_path / "replayed.yaml"
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    again, calls_again, final_again = await _played(
        store, runner, AgentSpec(prompt="tidy the notes", scenario=str(file))
    )
    assert again.cwd != recorded.cwd
    assert [name for name, _ in calls_again] == [name for name, _ in calls]
    assert _seen(calls_again, again.cwd) == _seen(calls, recorded.cwd)
    assert final_again == final
    notes = (Path(again.cwd) / "notes.md").read_text()
    assert notes == (Path(recorded.cwd) / "notes.md").read_text()


def test_a_cassette_without_an_answer_is_refused() -> None:
    records = [
        {"kind": "meta", "agent_id": "a1"},
        {"kind": "request", "n": 1, "path": "/v1/messages"},
    ]
    with pytest.raises(UsageError, match="no answered model request"):
        scenario_of(records, "x")
