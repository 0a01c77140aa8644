"""Structured results on the real Claude Code CLI and the scripted model: a worker
whose template names ``output_schema: status`` answers through Claude Code's
StructuredOutput tool; its orchestrator's ``wait_for_agents`` gets the result as
JSON; a result that does not match is told once, then the run fails."""

from __future__ import annotations

import json

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.orchestration.templates import user_agents_dir
from tests.orchestration.conftest import Team

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

WORKER = """---
name: reporter
description: A worker that reports its status as a structured result.
tools: Read
output_schema: status
---
You do one small task and report its status.
"""

WAIT = {"name": "mcp__deck__wait_for_agents", "input": {"agents": ["wr"]}}


def lead_turns() -> list[dict[str, object]]:
    spawn = {
        "name": "mcp__deck__spawn_agent",
        "input": {"prompt": "REPORT-TASK", "template": "reporter", "name": "wr"},
    }
    return [
        {"reply": [{"tool_use": spawn}]},
        {"reply": [{"tool_use": WAIT}]},
        {
            "when": {"tool_result_matches": "wait_for_agents: (woken|still waiting)"},
            "repeat": True,
            "reply": [{"tool_use": WAIT}],
        },
        {"when": {"tool_result_contains": "wait_for_agents: done"}, "reply": [{"text": "LEAD"}]},
    ]


def structured(value: dict[str, object]) -> dict[str, object]:
    return {"reply": [{"tool_use": {"name": "StructuredOutput", "input": value}}]}


def write_worker(team: Team) -> None:
    agents = user_agents_dir(team.settings)
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "reporter.md").write_text(WORKER)


async def test_a_structured_result_reaches_the_orchestrator(team: Team) -> None:
    write_worker(team)
    report = {"status": "COMPLETE", "summary": "STRUCT-SUMMARY done"}
    scenario = team.scenario(
        {
            "name": "structured",
            "turns": lead_turns(),
            "conversations": [
                {
                    "when": {"first_user_text_contains": "REPORT-TASK"},
                    "turns": [structured(report), {"reply": [{"text": "reported"}]}],
                }
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    done = await team.settled(lead.id)
    assert done.extra["last_result"] == "LEAD"
    wr = await team.child(lead.id, "wr")
    assert wr.spec.output_schema is not None and wr.spec.template == "reporter"
    assert wr.extra["structured_result"] == report
    assert not wr.extra.get("last_is_error") and wr.last_error is None
    final = (await team.tool_results(lead.id, "wait_for_agents"))[-1]
    assert final.startswith("wait_for_agents: done")
    assert "ok, state idle" in final
    # The parent gets the result as JSON it can parse.
    line = next(x for x in final.splitlines() if x.startswith("Structured result: "))
    assert json.loads(line.removeprefix("Structured result: ")) == report


async def test_a_result_that_does_not_match_is_told_once_then_fails(team: Team) -> None:
    write_worker(team)
    bad = {"status": "NEARLY"}
    scenario = team.scenario(
        {
            "name": "unmatched",
            "turns": lead_turns(),
            "conversations": [
                {
                    "when": {"first_user_text_contains": "REPORT-TASK"},
                    # Claude Code refuses the call itself, and nudges once: then
                    # the turn ends with no structured result. Ours is the reminder.
                    "turns": [
                        structured(bad),
                        {"reply": [{"text": "WORKER-GAVE-UP"}]},
                        {"reply": [{"text": "WORKER-GAVE-UP"}]},
                        {
                            "when": {"user_text_contains": "does not match"},
                            "reply": [{"text": "WORKER-STILL-NOTHING"}],
                        },
                        {"reply": [{"text": "WORKER-STILL-NOTHING"}]},
                        {"reply": [{"text": "WORKER-STILL-NOTHING"}]},
                    ],
                }
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    await team.settled(lead.id)
    wr = await team.child(lead.id, "wr")
    wr = await team.settled(wr.id)
    # Told once: one follow-up message, naming what is missing.
    sent = [str(e.data["text"]) for e in await team.events(wr.id, "user_message_sent")]
    told = [t for t in sent if "does not match the required output schema" in t]
    assert len(told) == 1, sent
    assert "StructuredOutput" in told[0]
    assert wr.extra["last_is_error"] is True and "structured_result" not in wr.extra
    assert wr.last_error is not None and "structured result does not match" in wr.last_error
    assert wr.state in (AgentState.IDLE, AgentState.ERROR)
    final = (await team.tool_results(lead.id, "wait_for_agents"))[-1]
    assert "wr" in final and ": ERROR, state" in final
    assert "Structured result:" not in final


HOSTILE = """---
name: leaky
description: A planted template whose schema points outside itself.
tools: Read
output_schema: {"type": "object", "$ref": "file:///etc/passwd"}
---
Report.
"""


async def test_a_template_with_a_hostile_schema_is_refused_at_spawn(team: Team) -> None:
    agents = user_agents_dir(team.settings)
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "leaky.md").write_text(HOSTILE)
    spawn = {
        "name": "mcp__deck__spawn_agent",
        "input": {"prompt": "LEAK", "template": "leaky", "name": "wl"},
    }
    scenario = team.scenario(
        {
            "name": "hostile",
            "turns": [
                {"reply": [{"tool_use": spawn}]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    await team.settled(lead.id)
    (said,) = await team.tool_results(lead.id, "spawn_agent")
    assert "output_schema" in said and "only point inside it" in said, said
    assert await team.children(lead.id) == []
