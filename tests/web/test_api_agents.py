"""Agents run through the API: the real Claude Code CLI against the scripted model."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import httpx
import psutil
import pytest

from agentdeck.runner import procs
from tests.support.waiting import eventually
from tests.web.conftest import RunningDaemon
from tests.web.sseclient import messages, stream_request

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

LONG = {"prompt": "run the long job", "scenario": "long-tool", "allow": ["Bash(python3:*)"]}


async def agent_state(api: httpx.AsyncClient, ref: str, *states: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        agent: dict[str, Any] = (await api.get(f"/api/agents/{ref}")).json()
        return agent if agent["state"] in states else None

    return await eventually(probe, timeout=60, what=f"agent {ref} in {states}")


async def event_of(
    api: httpx.AsyncClient, agent_id: str, type_: str, contains: str = ""
) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        page = (await api.get("/api/events", params={"agent": agent_id, "limit": 5000})).json()
        return next(
            (e for e in page["events"] if e["type"] == type_ and contains in json_of(e)), None
        )

    return await eventually(probe, timeout=60, what=f"{type_} of {agent_id}")


def json_of(event: dict[str, Any]) -> str:
    return str(event["data"])


async def test_chat_agent_completes_and_takes_a_follow_up(
    daemon: RunningDaemon, api: httpx.AsyncClient
) -> None:
    r = await api.post("/api/agents", json={"prompt": "hello", "scenario": "chat", "name": "chat"})
    assert r.status_code == 201, r.text
    agent = r.json()
    assert agent["spec"]["scenario"] == "chat" and agent["name"] == "chat"

    # Watch it over SSE until its turn completes.
    async with stream_request(api, {"after": 0, "agent": "chat"}) as response:
        seen: list[str] = []
        async for msg in messages(response):
            if msg.id is None:
                continue
            event = msg.json()
            assert event["agent_id"] == agent["id"]
            seen.append(event["type"])
            if event["type"] == "turn_completed":
                assert event["data"]["is_error"] is False
                break
    assert seen[:2] == ["agent_spawned", "state_changed"]
    assert "assistant_text" in seen
    idle = await agent_state(api, agent["id"], "idle")
    assert idle["session_id"] and idle["turns"] >= 1

    r = await api.post(f"/api/agents/{agent['id']}/messages", json={"text": "say it again"})
    assert r.status_code == 200, r.text
    await event_of(api, agent["id"], "assistant_text", "Hello again")
    await agent_state(api, agent["id"], "idle")


async def test_one_shot_agent_ends_done(api: httpx.AsyncClient) -> None:
    r = await api.post(
        "/api/agents", json={"prompt": "hi", "scenario": "chat", "keep_alive": False}
    )
    assert r.status_code == 201, r.text
    done = await agent_state(api, r.json()["id"], "done", "error")
    assert done["state"] == "done" and done["pid"] is None


async def _tool_pids(api: httpx.AsyncClient, agent_id: str) -> tuple[int, list[int]]:
    await event_of(api, agent_id, "tool_called")
    cli = (await api.get(f"/api/agents/{agent_id}")).json()["pid"]
    assert cli is not None

    async def sleepers() -> list[int]:
        return [
            p.pid
            for p in procs.process_tree(cli)
            if "time.sleep(60)" in " ".join(_cmdline(p)) and p.name().startswith("python")
        ]

    return cli, await eventually(sleepers, timeout=30, what="the tool's python process")


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


async def test_interrupt_a_long_tool(api: httpx.AsyncClient) -> None:
    agent = (await api.post("/api/agents", json=LONG)).json()
    cli, tool_pids = await _tool_pids(api, agent["id"])

    r = await api.post(f"/api/agents/{agent['id']}/interrupt")
    assert r.status_code == 200, r.text
    result = await event_of(api, agent["id"], "turn_completed")
    assert result["data"]["terminal_reason"] == "aborted_tools"
    assert await anyio.to_thread.run_sync(procs.wait_gone, tool_pids, 10) == []
    # Kept alive: the process waits for the next message.
    await agent_state(api, agent["id"], "idle")
    assert procs.is_running(cli)


async def test_kill_a_long_tool(api: httpx.AsyncClient) -> None:
    agent = (await api.post("/api/agents", json=LONG)).json()
    cli, tool_pids = await _tool_pids(api, agent["id"])
    tree = [p.pid for p in procs.process_tree(cli)]

    r = await api.post(f"/api/agents/{agent['id']}/kill")
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "killed"
    assert await anyio.to_thread.run_sync(procs.wait_gone, [*tree, *tool_pids], 10) == []
    killed = await agent_state(api, agent["id"], "killed")
    assert killed["pid"] is None
    # A killed agent cannot be killed again.
    again = await api.post(f"/api/agents/{agent['id']}/kill")
    assert again.status_code == 409
