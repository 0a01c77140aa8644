"""POST /api/agents/{ref}/files: a file for an agent's workspace."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import httpx
import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import spawned_events
from tests.web.conftest import RunningDaemon

pytestmark = pytest.mark.anyio


async def test_a_file_is_saved_in_the_workspace_and_bad_input_is_refused(
    daemon: RunningDaemon, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    now = time.time()
    agent = Agent(
        id="agfiles000001",
        name="files",
        state=AgentState.IDLE,
        spec=AgentSpec(prompt="hi"),
        cwd=str(tmp_path),
        created_at=now,
        updated_at=now,
    )
    await daemon.deck._store.record(spawned_events(agent), agent)
    content = base64.b64encode(b"col1,col2\n").decode()
    saved = await api.post(
        f"/api/agents/{agent.id}/files", json={"name": "data.csv", "content_base64": content}
    )
    assert saved.status_code == 201, saved.text
    assert saved.json() == {"path": "uploads/data.csv", "size": 10}
    assert (tmp_path / "uploads" / "data.csv").read_bytes() == b"col1,col2\n"

    bad = await api.post(
        f"/api/agents/{agent.id}/files", json={"name": "x.txt", "content_base64": "%%%"}
    )
    assert bad.status_code == 400 and "not base64" in bad.json()["error"]["message"]
    sneaky = await api.post(
        f"/api/agents/{agent.id}/files", json={"name": "../x.txt", "content_base64": content}
    )
    assert sneaky.status_code == 400 and "plain file name" in sneaky.json()["error"]["message"]
    missing = await api.post(
        "/api/agents/nosuchagent/files", json={"name": "x.txt", "content_base64": content}
    )
    assert missing.status_code == 404
