"""Recorded agents: the real Claude Code through the proxy, the scripted model upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import build_runner
from agentdeck.runner.recording.cassette import response_bytes
from agentdeck.runner.recording.store import Recordings
from agentdeck.runner.runner import Runner
from agentdeck.settings import Settings
from agentdeck.store.store import Store
from tests.conftest import make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SECRET = "ghp_" + "Z" * 36


@pytest.fixture
async def opened(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Runner]:
    extra: dict[str, Any] = getattr(request, "param", {})
    settings: Settings = make_settings(tmp_path, **extra)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    runner = build_runner(store, settings)
    try:
        yield runner
    finally:
        try:
            await runner.shutdown()
        finally:
            await store.close()


def _scenario(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, **data}))
    return str(path)


async def test_a_recorded_run_keeps_every_exchange_and_no_secret(
    opened: Runner, tmp_path: Path
) -> None:
    scenario = _scenario(
        tmp_path,
        "leaky",
        {
            "turns": [
                {"reply": [{"tool_use": {"name": "Bash", "input": {"command": f"echo {SECRET}"}}}]},
                {"reply": [{"text": "Printed it."}]},
            ]
        },
    )
    session = await opened.start(
        AgentSpec(prompt="print the token", scenario=scenario, record=True, allow=("Bash",))
    )
    await session.wait_finished(timeout=90)
    assert session.agent.state == AgentState.DONE, session.agent.last_error
    recordings = Recordings.of(opened.settings)
    (info,) = recordings.listed()
    assert (info.agent_id, info.state, info.mode) == (session.agent.id, "done", "all")
    records = recordings.records(session.agent.id)
    text = recordings.path_of(session.agent.id).read_text()
    assert SECRET not in text and "sk-agentdeck-scripted" not in text
    (meta,) = [r for r in records if r["kind"] == "meta"]
    assert meta["upstream"].endswith("/s/leaky")
    (start,) = [r for r in records if r["kind"] == "start"]
    assert start["cwd"] == session.agent.cwd and start["git_head"] is None
    # n 1: the first on the agent's timeline, before any tool call's own; kept before
    # its first request went on.
    assert start["checkpoint"]["n"] == 1
    assert start["checkpoint"]["summary"] == "recording start"
    assert records.index(start) < [r["kind"] for r in records].index("request")
    messages = [
        r for r in records if r["kind"] == "request" and r["path"].startswith("/v1/messages")
    ]
    assert len(messages) >= 2
    # The tool's output went back to the model in the second request: scrubbed there.
    assert "[REDACTED" in str(messages[-1]["body"])
    last = messages[-1]["n"]
    assert b"Printed it." in response_bytes(records, last)
    ends = [r for r in records if r["kind"] == "end"]
    assert ends and all(e["outcome"] == "complete" for e in ends)


@pytest.mark.parametrize("opened", [{"record": "errors"}], indirect=True)
async def test_errors_mode_drops_a_fine_run_and_keeps_a_failed_one(
    opened: Runner, tmp_path: Path
) -> None:
    fine = await opened.start(AgentSpec(prompt="hi", scenario="chat"))
    failing = _scenario(
        tmp_path,
        "down",
        {
            "faults": [{"on_request": 1, "always": True, "http_status": 500}],
            "turns": [{"reply": [{"text": "never"}]}],
        },
    )
    failed = await opened.start(AgentSpec(prompt="hi", scenario=failing))
    await fine.wait_finished(timeout=90)
    await failed.wait_finished(timeout=90)
    assert (fine.agent.state, failed.agent.state) == (AgentState.DONE, AgentState.ERROR)
    await opened.shutdown()
    recordings = Recordings.of(opened.settings)
    (info,) = recordings.listed()
    assert (info.agent_id, info.state, info.mode) == (failed.agent.id, "error", "errors")
    statuses = [r["status"] for r in recordings.records(info.agent_id) if r["kind"] == "response"]
    assert statuses and set(statuses) == {500}
