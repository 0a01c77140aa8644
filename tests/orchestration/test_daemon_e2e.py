"""Orchestration as users reach it: through the daemon's API and the
``agentdeck`` command, across a daemon restart, and from a hand-started
``claude -p`` through ``agentdeck mcp --orchestrate``. The real Claude Code CLI
against the scripted model throughout."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from pydantic import SecretStr

from agentdeck.core.agent import AgentState
from agentdeck.settings import Settings
from tests.orchestration.conftest import SCENARIOS
from tests.support.deckcli import Done, deck, deck_env
from tests.support.mockmodel import cli_env, run_claude, running_mock
from tests.support.served import Served, serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

TEAM = str(SCENARIOS / "team.yaml")


async def cli(env: dict[str, str], *args: str) -> Done:
    """``agentdeck ARGS`` in a subprocess, off the loop the daemon runs in."""
    return await asyncio.to_thread(deck, env, *args)


async def agent(served: Served, ref: str) -> dict[str, Any]:
    async with served.api() as api:
        response = await api.get(f"/api/agents/{ref}")
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data


async def settled(served: Served, ref: str, *, timeout: float = 120) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = await agent(served, ref)
        busy = AgentState(found["state"]).is_busy
        return found if not busy and found["turns"] > 0 else None

    try:
        return await eventually(probe, timeout=timeout, what=f"agent {ref} to finish its turn")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{await picture(served)}") from None


async def picture(served: Served, tail: int = 8) -> str:
    """What the deck looked like when a wait timed out: each agent's state, the
    process behind it, the questions, and each agent's last events (a flake seen
    only in CI tells where it stopped)."""
    lines = []
    async with served.api() as api:
        agents = (await api.get("/api/tree")).json()["agents"]
        for a in agents:
            alive = a["pid"] is not None and psutil.pid_exists(a["pid"])
            extra = {k: a["extra"][k] for k in ("waiting_for", "asking") if k in a["extra"]}
            lines.append(
                f"{a['name']}: {a['state']}, tool {a['current_tool']}, turns {a['turns']}, "
                f"pid {a['pid']} {'alive' if alive else 'gone'} {extra}"
            )
            found = (await api.get("/api/events", params={"agent": a["id"]})).json()["events"]
            for e in found[-tail:]:
                data = json.dumps(e["data"])[:160]
                lines.append(f"  #{e['id']} {e['ts']:.3f} {e['type']} {data}")
        params = {"state": ["pending", "answered", "expired"]}
        for ask in (await api.get("/api/asks", params=params)).json()["asks"]:
            lines.append(
                f"ask {ask['id']} of {ask['agent_id']}: {ask['state']}, "
                f"delivered {ask.get('delivered_at') is not None}"
            )
    return "\n".join(lines)


async def test_workers_questions_are_answered_through_the_api_and_the_cli(
    settings: Settings, tmp_path: Path
) -> None:
    env = deck_env(tmp_path)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "build it", "agent": "orchestrator", "scenario": TEAM, "name": "boss"},
        )
        assert created.status_code == 201, created.text
        boss = created.json()
        assert boss["spec"]["template"] == "orchestrator" and boss["spec"]["orchestrator"]

        async def two_questions() -> list[dict[str, Any]] | None:
            asks = (await api.get("/api/asks")).json()["asks"]
            return asks if len(asks) == 2 else None

        asks = await eventually(two_questions, timeout=90, what="both workers' questions")
        assert {a["to_agent_id"] for a in asks} == {boss["id"]}
        by_text = {a["text"].split(":")[0]: a for a in asks}
        listed = await cli(env, "asks")
        assert listed.code == 0 and by_text["QUESTION-A"]["id"] in listed.out
        answered = await api.post(
            f"/api/asks/{by_text['QUESTION-A']['id']}", json={"answer": "ANSWER-FROM-API"}
        )
        assert answered.status_code == 200 and answered.json()["state"] == "answered"
        again = await api.post(f"/api/asks/{by_text['QUESTION-A']['id']}", json={"answer": "twice"})
        assert again.status_code == 409
        said = again.json()["error"]["message"]
        assert said.startswith(f"question {by_text['QUESTION-A']['id']} is answered"), said
        done = await cli(env, "answer", by_text["QUESTION-B"]["id"], "ANSWER-FROM-CLI")
        assert done.code == 0, done.err
        assert done.out.startswith(f"answered {by_text['QUESTION-B']['id']}")

        final = await settled(served, boss["id"])
        assert final["extra"]["last_result"] == "TEAM-REPORT: both workers finished."
        children = (await api.get("/api/agents", params={"parent": boss["id"]})).json()["agents"]
        assert sorted(c["name"] for c in children) == ["wa", "wb"]
        assert all(c["parent_id"] == boss["id"] for c in children)
        all_asks = (await api.get("/api/asks", params={"state": ["answered"]})).json()["asks"]
        assert {a["answered_by"] for a in all_asks} == {"user:api:admin", "user:cli:admin"}
        events = (await api.get("/api/events", params={"agent": boss["id"]})).json()["events"]
        waits = [
            e["data"]["output"]
            for e in events
            if e["type"] == "tool_returned" and "wait_for_agents: done" in e["data"]["output"]
        ]
        assert waits and "WORKER-A-DONE" in waits[-1] and "WORKER-B-DONE" in waits[-1]
        tree = (await api.get("/api/tree")).json()["agents"]
        assert [a["name"] for a in tree] == ["boss", "wa", "wb"]

        shown = await cli(env, "ls", "--tree")
        assert shown.code == 0, shown.err
        lines = shown.out.splitlines()
        boss_line = next(i for i, line in enumerate(lines) if " boss " in line)
        assert "└ wa" in lines[boss_line + 1] and "└ wb" in lines[boss_line + 2]
        show = await cli(env, "show", "boss")
        assert "children (2):" in show.out and "template  orchestrator" in show.out
        logs = await cli(env, "logs", children[0]["id"])
        assert "? asks its orchestrator: QUESTION-" in logs.out
        assert "← answer from user:" in logs.out


@pytest.mark.usefixtures("plain_engineer")  # its worker answers in plain text
async def test_a_restart_while_the_orchestrator_waits_and_the_wait_completes_after_it(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = tmp_path / "restart.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "restart",
                "turns": [
                    {
                        "reply": [
                            {
                                "tool_use": {
                                    "name": "mcp__deck__spawn_agent",
                                    "input": {"prompt": "TASK-SLOW", "name": "slow"},
                                }
                            }
                        ]
                    },
                    {"reply": [{"tool_use": {"name": "mcp__deck__wait_for_agents", "input": {}}}]},
                    {
                        "when": {"user_text_contains": "agentdeck restarted"},
                        "reply": [
                            {"tool_use": {"name": "mcp__deck__wait_for_agents", "input": {}}}
                        ],
                    },
                    {
                        "when": {"tool_result_contains": "wait_for_agents: done"},
                        "reply": [{"text": "LEAD-DONE after the restart"}],
                    },
                ],
                "conversations": [
                    {
                        "when": {"first_user_text_contains": "TASK-SLOW"},
                        "turns": [{"delay": 6, "reply": [{"text": "SLOW-DONE"}]}],
                    }
                ],
            }
        )
    )
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "lead", "agent": "orchestrator", "scenario": str(scenario)},
        )
        lead = created.json()

        async def waiting() -> bool:
            return (await agent(served, lead["id"]))["state"] == "awaiting_agents"

        await eventually(waiting, timeout=60, what="the orchestrator to wait")
        (slow,) = (await api.get("/api/agents", params={"parent": lead["id"]})).json()["agents"]
    # The daemon stopped (as by SIGTERM): both were mid-turn, both are suspended.
    async with serving(settings) as served, served.api() as api:
        final = await settled(served, lead["id"], timeout=120)
        assert final["state"] == "idle"
        assert final["extra"]["last_result"] == "LEAD-DONE after the restart"
        assert "resume_at_start" not in final["extra"] and "waiting_for" not in final["extra"]
        events = (await api.get("/api/events", params={"agent": lead["id"]})).json()["events"]
        said = [e["data"]["text"] for e in events if e["type"] == "user_message_sent"]
        assert any(t.startswith("agentdeck restarted while you were waiting") for t in said)
        states = [e["data"]["new"] for e in events if e["type"] == "state_changed"]
        assert "interrupted" in states and states[-1] == "idle"
        waits = [
            e["data"]["output"]
            for e in events
            if e["type"] == "tool_returned" and "wait_for_agents: done" in e["data"]["output"]
        ]
        assert waits and "SLOW-DONE" in waits[-1]
        worker = await agent(served, slow["id"])
        assert worker["parent_id"] == lead["id"] and worker["extra"]["last_result"] == "SLOW-DONE"
        children = (await api.get("/api/agents", params={"parent": lead["id"]})).json()["agents"]
        assert [c["id"] for c in children] == [slow["id"]]  # resumed, not spawned again


@pytest.mark.usefixtures("plain_engineer")  # its worker answers in plain text
async def test_a_hand_started_claude_orchestrates_through_agentdeck_mcp(
    settings: Settings, tmp_path: Path
) -> None:
    script = {
        "name": "outside",
        "turns": [
            {
                "reply": [
                    {
                        "tool_use": {
                            "name": "mcp__agentdeck__spawn_agent",
                            "input": {"prompt": "TASK-HELPER", "name": "helper"},
                        }
                    }
                ]
            },
            {
                "reply": [
                    {
                        "tool_use": {
                            "name": "mcp__agentdeck__wait_for_agents",
                            "input": {"agents": ["helper"]},
                        }
                    }
                ]
            },
            {
                "when": {"tool_result_contains": "note from helper: HELPER-NOTE"},
                "reply": [
                    {
                        "tool_use": {
                            "name": "mcp__agentdeck__wait_for_agents",
                            "input": {"agents": ["helper"]},
                        }
                    }
                ],
            },
            {
                "when": {"tool_result_contains": "HELPER-DONE"},
                "reply": [{"text": "OUTSIDE-DONE"}],
            },
        ],
        "conversations": [
            {
                "when": {"first_user_text_contains": "TASK-HELPER"},
                # A deck tool under an external parent needs no approval.
                "turns": [
                    {
                        "reply": [
                            {
                                "tool_use": {
                                    "name": "mcp__deck__notify_parent",
                                    "input": {"text": "HELPER-NOTE"},
                                }
                            }
                        ]
                    },
                    {"reply": [{"text": "HELPER-DONE"}]},
                ],
            }
        ],
    }
    path = tmp_path / "outside.yaml"
    path.write_text(yaml.safe_dump(script))
    async with running_mock(path) as mm:
        url = mm.url_for("outside")
        daemon_settings = settings.model_copy(
            update={"anthropic_base_url": url, "anthropic_api_key": SecretStr("sk-fake")}
        )
        async with serving(daemon_settings) as served:
            env = deck_env(tmp_path)
            config = tmp_path / "mcp.json"
            config.write_text(
                json.dumps(
                    {
                        "mcpServers": {
                            "agentdeck": {
                                "type": "stdio",
                                "command": sys.executable,
                                "args": ["-m", "agentdeck", "mcp", "--orchestrate"],
                                "env": {k: v for k, v in env.items() if k.startswith("AGENTDECK_")},
                            }
                        }
                    }
                )
            )
            project = tmp_path / "project"
            project.mkdir()
            run = await run_claude(
                [
                    "-p",
                    "get help",
                    "--mcp-config",
                    str(config),
                    "--allowedTools",
                    "mcp__agentdeck__spawn_agent,mcp__agentdeck__wait_for_agents",
                ],
                cwd=project,
                env=cli_env(tmp_path / "user", url),
                timeout=180,
            )
            assert run.returncode == 0, run.stderr[-2000:]
            assert run.result["result"] == "OUTSIDE-DONE"
            session = run.result["session_id"]
            async with served.api() as api:
                agents = (await api.get("/api/tree")).json()["agents"]
            outside = next(a for a in agents if a["session_id"] == session)
            assert outside["source"] == "external" and outside["parent_id"] is None
            helper = next(a for a in agents if a["name"] == "helper")
            assert helper["parent_id"] == outside["id"] and helper["source"] == "agentdeck"
            assert helper["extra"]["last_result"] == "HELPER-DONE"
            async with served.api() as api:
                approvals = (await api.get("/api/approvals")).json()["approvals"]
                assert approvals == []
                # Only a hand-started session's agent may use the tools through the API.
                refused = await api.post(f"/api/agents/{helper['id']}/deck/list_agents", json={})
                assert refused.status_code == 400


async def test_an_answer_given_while_the_worker_was_stopped_reaches_it_on_resume(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = tmp_path / "late.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "late",
                "turns": [
                    {
                        "reply": [
                            {
                                "tool_use": {
                                    "name": "mcp__deck__ask_orchestrator",
                                    "input": {"question": "QUESTION-LATE: which port?"},
                                }
                            }
                        ]
                    },
                    {
                        "when": {"user_text_contains": "LATE-ANSWER"},
                        "reply": [{"text": "GOT-LATE-ANSWER"}],
                    },
                ],
            }
        )
    )
    env = deck_env(tmp_path)
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={"prompt": "ask", "scenario": str(scenario), "resume_on_restart": True},
        )
        worker = created.json()

        async def asked() -> list[dict[str, Any]] | None:
            return (await api.get("/api/asks")).json()["asks"] or None

        (ask,) = await eventually(asked, timeout=60, what="the question")
        assert ask["to_agent_id"] is None  # no orchestrator: a person answers
        assert (await agent(served, worker["id"]))["state"] == "awaiting_input"
    # No daemon: the answer is stored for the worker, which is stopped.
    done = await cli(env, "answer", ask["id"], "LATE-ANSWER: 8080")
    assert done.code == 0, done.err
    async with serving(settings) as served, served.api() as api:
        final = await settled(served, worker["id"])
        assert final["extra"]["last_result"] == "GOT-LATE-ANSWER"
        events = (await api.get("/api/events", params={"agent": worker["id"]})).json()["events"]
        said = [e["data"]["text"] for e in events if e["type"] == "user_message_sent"]
        told = [t for t in said if "came from cli (a person):\nLATE-ANSWER: 8080" in t]
        assert told and "still open" not in told[0]
        stored = (await api.get(f"/api/asks/{ask['id']}")).json()
        assert stored["state"] == "answered" and stored["delivered_at"] is not None
