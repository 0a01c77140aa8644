"""Several machines' worth of agentdeck on this one (issue 30, items 3, 4, 6, 8):
API nodes (``agentdeck up --no-runner``) and runner hosts (``agentdeck runner``),
each a process with its own home, on one real PostgreSQL database.

- an agent started on node 1 runs on a runner host and is approved on node 2;
- kill -9 of a host mid-turn: its agent is marked lost within the lease, queued
  again (``resume_on_restart``) and carried on by the other host, from the
  transcript kept in the database (its file removed first), no event lost or twice;
- SIGSTOP of a host past its lease, then SIGCONT: it finds itself fenced, says so,
  stops its Claude Code process; the agent goes on elsewhere.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from agentdeck.runner import procs
from tests.support.cluster import SLOW_TURN, Cluster, api
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually

pytestmark = pytest.mark.anyio


def slow_scenario(tmp_path: Path) -> str:
    path = tmp_path / "slow-turn.yaml"
    path.write_text(yaml.safe_dump(SLOW_TURN))
    return str(path)


async def slow_agent_in_its_tool(client: Any, tmp_path: Path) -> dict[str, Any]:
    """An agent (``resume_on_restart``) started through ``client``, once it is in its
    long tool call, with its Claude session and process known."""
    made = await client.post(
        "/api/agents",
        json={
            "prompt": "run the job",
            "scenario": slow_scenario(tmp_path),
            "allow": ["Bash(python3:*)"],
            "resume_on_restart": True,
        },
    )
    agent_id = made.json()["id"]

    async def in_its_tool() -> dict[str, Any] | None:
        agent = await agent_of(client, agent_id)
        busy = agent.get("current_tool") == "Bash" and agent.get("session_id")
        return agent if busy and agent.get("pid") else None

    return dict(await eventually(in_its_tool, timeout=90, what="the agent in its long tool"))


async def agent_of(client: Any, agent_id: str) -> dict[str, Any]:
    answer = await client.get(f"/api/agents/{agent_id}")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def events_of(client: Any, agent_id: str) -> list[dict[str, Any]]:
    answer = await client.get("/api/events", params={"agent": agent_id, "limit": 1000})
    return list(answer.json()["events"])


async def test_started_on_one_node_run_on_a_host_approved_on_the_other(
    cluster: Cluster, tmp_path: Path
) -> None:
    one = await cluster.node("node1")
    two = await cluster.node("node2")
    await cluster.host("hostA", "--capacity", "2")
    profile, scenario = ask_profile_and_scenario(tmp_path)
    async with api(one) as first, api(two) as second:
        made = await first.post(
            "/api/agents", json={"prompt": "make it", "scenario": scenario, "profile": profile}
        )
        assert made.status_code == 201, made.text
        agent_id = made.json()["id"]
        assert made.json()["state"] == "queued"

        async def pending() -> list[dict[str, Any]]:
            return list((await second.get("/api/approvals")).json()["approvals"])

        (approval,) = await eventually(pending, timeout=90, what="a pending approval")
        answered = await second.post(f"/api/approvals/{approval['id']}", json={"decision": "allow"})
        assert answered.json()["state"] == "allowed"

        async def finished() -> dict[str, Any] | None:
            agent = await agent_of(first, agent_id)
            return agent if agent["state"] == "idle" and agent["turns"] >= 1 else None

        agent = await eventually(finished, timeout=90, what="the agent's turn to end")
        assert agent["extra"]["host"] == "hostA"
        assert (Path(agent["cwd"]) / "made.txt").exists()
        hosts = cluster.cli("node1", "hosts", "--json").json()
        assert [(h["name"], h["live_leases"]) for h in hosts] == [("hostA", 1)]
        # Steering reaches the host through the database, from either node.
        sent = await second.post(f"/api/agents/{agent_id}/messages", json={"text": "and now?"})
        assert sent.status_code == 200, sent.text

        async def followed_up() -> dict[str, Any] | None:
            agent = await agent_of(first, agent_id)
            return agent if agent["state"] == "idle" and agent["turns"] >= 2 else None

        await eventually(followed_up, timeout=90, what="the follow-up answered on host A")
        killed = await first.post(f"/api/agents/{agent_id}/kill", json={})
        assert killed.status_code == 200, killed.text
        assert killed.json()["state"] == "killed"

    async def released() -> bool:
        hosts = cluster.cli("node1", "hosts", "--json").json()
        return [(h["name"], h["live_leases"]) for h in hosts] == [("hostA", 0)]

    await eventually(released, timeout=30, what="host A to let the agent go")


async def test_a_host_killed_mid_turn_is_lost_and_its_agent_carried_on_elsewhere(
    cluster: Cluster, tmp_path: Path
) -> None:
    node = await cluster.node("node1")
    a = await cluster.host("hostA", "--capacity", "1")
    async with api(node) as client:
        running = await slow_agent_in_its_tool(client, tmp_path)
        agent_id = running["id"]
        assert running["extra"]["host"] == "hostA"

        async def kept() -> bool:  # at host A's next heartbeat, the tool call in it
            engine = sa.create_engine(cluster.url)
            try:
                with engine.connect() as conn:
                    text = conn.execute(
                        sa.text("SELECT data FROM transcripts WHERE agent_id = :a"),
                        {"a": agent_id},
                    ).scalar()
            finally:
                engine.dispose()
            return bool(text) and "time.sleep(45)" in text

        await eventually(kept, timeout=30, what="the transcript kept in the database")
        # The transcript file goes with host A's disk: host B must take it from the database.
        transcript = next((tmp_path / "hostA" / "claude-config" / "projects").rglob("*.jsonl"))
        a.signal(signal.SIGKILL)
        a.proc.wait(timeout=10)  # type: ignore[union-attr]
        transcript.unlink()
        cpid = running.get("pid")
        if cpid:  # what host A started dies with its machine
            procs.terminate_tree(int(cpid), 1.0)

        async def lost() -> list[dict[str, Any]] | None:
            if (await agent_of(client, agent_id))["state"] != "queued":
                return None  # interrupted, then queued again: two writes
            events = await events_of(client, agent_id)
            return [e for e in events if e["data"].get("kind") == "host_lost"] or None

        (said,) = await eventually(lost, timeout=30, what="the agent lost and queued again")
        assert said["type"] == "error_occurred"
        assert said["data"]["message"] == "runner host hostA lost"
        await cluster.host("hostB", "--capacity", "1")

        async def carried_on() -> dict[str, Any] | None:
            agent = await agent_of(client, agent_id)
            return (
                agent
                if agent["state"] == "idle" and agent["extra"].get("host") == "hostB"
                else None
            )

        await eventually(carried_on, timeout=90, what="the agent resumed on host B")
        events = await events_of(client, agent_id)
    ids = [e["id"] for e in events]
    assert ids == sorted(set(ids))  # none twice
    assert [e["type"] for e in events].count("agent_spawned") == 1
    texts = [e["data"].get("text") for e in events if e["type"] == "assistant_text"]
    assert "Carried on after the job." in texts


async def test_a_host_stopped_past_its_lease_is_fenced_when_it_comes_back(
    cluster: Cluster, tmp_path: Path
) -> None:
    node = await cluster.node("node1")
    a = await cluster.host("hostA", "--capacity", "1")
    async with api(node) as client:
        running = await slow_agent_in_its_tool(client, tmp_path)
        agent_id = running["id"]
        claude_pid = int(running["pid"])
        a.signal(signal.SIGSTOP)
        await cluster.host("hostB", "--capacity", "1")

        async def elsewhere() -> dict[str, Any] | None:
            agent = await agent_of(client, agent_id)
            return agent if agent["extra"].get("host") == "hostB" else None

        await eventually(elsewhere, timeout=60, what="the agent taken by host B")
        a.signal(signal.SIGCONT)

        async def fenced() -> bool:
            return "fenced from agent" in a.output()

        await eventually(fenced, timeout=30, what="host A to say it is fenced")

        async def gone() -> bool:  # (runs_since(pid, 0) was never true: it checked nothing)
            return not procs.is_running(claude_pid)

        await eventually(gone, timeout=30, what="host A's Claude Code process to stop")

        async def settled() -> dict[str, Any] | None:
            agent = await agent_of(client, agent_id)
            return agent if agent["state"] == "idle" else None

        agent = await eventually(settled, timeout=90, what="the agent carried on by host B")
    assert agent["extra"]["host"] == "hostB"


SPREAD = {
    "name": "spread",
    "turns": [
        {
            "reply": [
                {"text": "Two workers."},
                {
                    "tool_use": {
                        "name": "mcp__deck__spawn_agent",
                        "input": {"prompt": "JOB-1: say one", "template": "engineer", "name": "w1"},
                    }
                },
                {
                    "tool_use": {
                        "name": "mcp__deck__spawn_agent",
                        "input": {"prompt": "JOB-2: say two", "template": "engineer", "name": "w2"},
                    }
                },
            ]
        },
        {
            "reply": [
                {
                    "tool_use": {
                        "name": "mcp__deck__wait_for_agents",
                        "input": {"agents": ["w1", "w2"]},
                    }
                }
            ]
        },
        {
            "when": {"tool_result_matches": "wait_for_agents: (woken|still waiting)"},
            "repeat": True,
            "reply": [
                {
                    "tool_use": {
                        "name": "mcp__deck__wait_for_agents",
                        "input": {"agents": ["w1", "w2"]},
                    }
                }
            ],
        },
        {
            "when": {"tool_result_contains": "wait_for_agents: done"},
            "reply": [{"text": "SPREAD-REPORT: both done."}],
        },
    ],
    "conversations": [
        {"when": {"first_user_text_contains": "JOB-1"}, "turns": [{"reply": [{"text": "ONE"}]}]},
        {"when": {"first_user_text_contains": "JOB-2"}, "turns": [{"reply": [{"text": "TWO"}]}]},
    ],
}


async def test_an_orchestrators_children_run_on_another_host_and_it_waits_for_them(
    cluster: Cluster, tmp_path: Path
) -> None:
    node = await cluster.node("node1")
    await cluster.host("hostA", "--capacity", "1")
    scenario = tmp_path / "spread.yaml"
    scenario.write_text(yaml.safe_dump(SPREAD))
    async with api(node) as client:
        made = await client.post(
            "/api/agents",
            json={"prompt": "lead", "agent": "orchestrator", "scenario": str(scenario)},
        )
        assert made.status_code == 201, made.text
        boss = made.json()["id"]

        async def children() -> list[dict[str, Any]] | None:
            found = (await client.get("/api/agents", params={"parent": boss})).json()["agents"]
            return found if len(found) == 2 else None

        kids = await eventually(children, timeout=90, what="the two children")
        assert {k["state"] for k in kids} == {"queued"}  # host A is full: its boss runs there
        await cluster.host("hostB", "--capacity", "2")

        async def reported() -> dict[str, Any] | None:
            agent = await agent_of(client, boss)
            return agent if agent["state"] == "idle" and agent["turns"] >= 1 else None

        await eventually(reported, timeout=120, what="the orchestrator's report")
        events = await events_of(client, boss)
        kids = (await client.get("/api/agents", params={"parent": boss})).json()["agents"]
        assert (await agent_of(client, boss))["extra"]["host"] == "hostA"
    assert {k["extra"]["host"] for k in kids} == {"hostB"}
    texts = [e["data"].get("text") for e in events if e["type"] == "assistant_text"]
    assert "SPREAD-REPORT: both done." in texts
