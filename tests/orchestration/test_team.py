"""An orchestrator and its workers on the real Claude Code CLI and the scripted
model, in one process: questions and answers, notes, messages, transcripts,
waiting past Claude Code's timeout for one tool call, killing a tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.asks import AskState
from agentdeck.orchestration.tools import deck_server
from agentdeck.settings import Settings
from tests.orchestration.conftest import Team, make_team
from tests.support.waiting import eventually

# Its workers answer in plain text: the built-in engineer without its structured status.
pytestmark = [pytest.mark.anyio, pytest.mark.cli, pytest.mark.usefixtures("plain_engineer")]

WAIT = {"name": "mcp__deck__wait_for_agents", "input": {"agents": ["wa", "wb"]}}


def spawn(name: str, prompt: str, **extra: object) -> dict[str, object]:
    return {
        "tool_use": {
            "name": "mcp__deck__spawn_agent",
            "input": {"prompt": prompt, "template": "engineer", "name": name, **extra},
        }
    }


async def test_the_orchestrator_answers_one_question_a_person_the_other(team: Team) -> None:
    scenario = team.scenario(
        {
            "name": "answers",
            "turns": [
                {"reply": [spawn("wa", "TASK-A"), spawn("wb", "TASK-B")]},
                {"reply": [{"tool_use": WAIT}]},
                {
                    "when": {"tool_result_contains": "QUESTION-A"},
                    "reply": [
                        {
                            "tool_use": {
                                "name": "mcp__deck__answer_request",
                                "input": {"request_id": "wa", "answer": "ANSWER-A: PEG"},
                            }
                        }
                    ],
                },
                {
                    "when": {"tool_result_matches": "woken|still waiting|Answered wa"},
                    "repeat": True,
                    "reply": [{"tool_use": WAIT}],
                },
                {
                    "when": {"tool_result_contains": "wait_for_agents: done"},
                    "reply": [{"text": "LEAD-REPORT"}],
                },
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-A"},
                    "turns": [
                        {
                            "reply": [
                                {
                                    "tool_use": {
                                        "name": "mcp__deck__ask_orchestrator",
                                        "input": {"question": "QUESTION-A: which grammar?"},
                                    }
                                }
                            ]
                        },
                        {"reply": [{"text": "WORKER-A-DONE"}]},
                    ],
                },
                {
                    "when": {"first_user_text_contains": "TASK-B"},
                    "turns": [
                        {
                            "delay": 3,  # asks after the orchestrator has answered A
                            "reply": [
                                {
                                    "tool_use": {
                                        "name": "mcp__deck__ask_orchestrator",
                                        "input": {"question": "QUESTION-B: which format?"},
                                    }
                                }
                            ],
                        },
                        {"reply": [{"text": "WORKER-B-DONE"}]},
                    ],
                },
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    wb = await team.child(lead.id, "wb")

    async def question_b() -> list[object] | None:
        found = await team.orch.inbox.list_questions(agent_id=wb.id)
        return found or None

    (ask_b,) = await eventually(question_b, timeout=90, what="wb's question")
    assert ask_b.to_agent_id == lead.id and ask_b.text == "QUESTION-B: which format?"
    assert (await team.orch.agent(wb.id)).state == AgentState.AWAITING_INPUT
    await team.orch.inbox.answer(ask_b.id, "ANSWER-B: JSON", by="user:test")

    done = await team.settled(lead.id)
    assert done.state == AgentState.IDLE and done.extra["last_result"] == "LEAD-REPORT"
    wa = await team.child(lead.id, "wa")
    # The workers were told the answers, by whom.
    (told_a,) = await team.tool_results(wa.id, "ask_orchestrator")
    assert told_a.startswith(f"Answer from your orchestrator {lead.name} to your question")
    assert told_a.endswith("ANSWER-A: PEG")
    (told_b,) = await team.tool_results(wb.id, "ask_orchestrator")
    assert "Answer from test (a person)" in told_b and told_b.endswith("ANSWER-B: JSON")
    # The last wait returned both results.
    final = (await team.tool_results(lead.id, "wait_for_agents"))[-1]
    assert final.startswith("wait_for_agents: done")
    assert "WORKER-A-DONE" in final and "WORKER-B-DONE" in final and "ok, state idle" in final
    # The asks are on record, answered by the orchestrator and by a person.
    asks = {a.agent_id: a for a in await team.orch.inbox.list_questions(states=[*AskState])}
    assert asks[wa.id].answered_by == f"agent:{lead.id}" and asks[wa.id].delivered_at
    assert asks[wb.id].answered_by == "user:test" and asks[wb.id].delivered_at
    states = [e.data["new"] for e in await team.events(lead.id, "state_changed")]
    assert "awaiting_agents" in states
    assert "awaiting_input" in [e.data["new"] for e in await team.events(wa.id, "state_changed")]
    questions = await team.events(wa.id, "question_answered")
    assert [e.data["answer"] for e in questions] == ["ANSWER-A: PEG"]


async def test_notes_messages_transcripts_and_the_list(team: Team) -> None:
    scenario = team.scenario(
        {
            "name": "chatter",
            "turns": [
                {"reply": [spawn("wa", "TASK-A"), spawn("wb", "TASK-B")]},
                {"reply": [{"tool_use": WAIT}]},
                {
                    "when": {"tool_result_matches": "woken|still waiting"},
                    "repeat": True,
                    "reply": [{"tool_use": WAIT}],
                },
                {
                    "when": {"tool_result_contains": "wait_for_agents: done"},
                    "reply": [
                        {
                            "tool_use": {
                                "name": "mcp__deck__read_transcript",
                                "input": {"agent": "wa"},
                            }
                        }
                    ],
                },
                {"reply": [{"tool_use": {"name": "mcp__deck__list_agents", "input": {}}}]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-A"},
                    "turns": [
                        {
                            "reply": [
                                {
                                    "tool_use": {
                                        "name": "mcp__deck__notify_parent",
                                        "input": {"text": "NOTE-1: halfway"},
                                    }
                                },
                                {
                                    "tool_use": {
                                        "name": "mcp__deck__message_agent",
                                        "input": {"agent": "wb", "text": "HELLO-B"},
                                    }
                                },
                            ]
                        },
                        {"reply": [{"text": "WORKER-A-DONE"}]},
                    ],
                },
                {
                    "when": {"first_user_text_contains": "TASK-B"},
                    "turns": [
                        # wa's message reaches wb before its first request (Claude Code
                        # still booting: a loaded machine): it is one prompt with the
                        # task, ``TASK-B\nMessage from wa:\nHELLO-B``, answered at once.
                        {
                            "when": {"user_text_contains": "HELLO-B"},
                            "reply": [{"text": "GOT-HELLO"}],
                        },
                        {"reply": [{"text": "WORKER-B-DONE"}]},
                        # Or it comes later: a turn of its own.
                        {
                            "when": {"user_text_contains": "HELLO-B"},
                            "reply": [{"text": "GOT-HELLO"}],
                        },
                    ],
                },
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    done = await team.settled(lead.id)
    assert done.extra["last_result"] == "LEAD-DONE"
    waits = await team.tool_results(lead.id, "wait_for_agents")
    noted = [w for w in waits if "note from wa: NOTE-1: halfway" in w]
    assert noted, waits
    wa, wb = await team.child(lead.id, "wa"), await team.child(lead.id, "wb")
    (sent,) = await team.tool_results(wa.id, "message_agent")
    assert sent.startswith("Sent to wb")
    heard = [e.data["text"] for e in await team.events(wb.id, "user_message_sent")]
    assert "Message from wa:\nHELLO-B" in heard
    (transcript,) = await team.tool_results(lead.id, "read_transcript")
    assert transcript.startswith(f"Transcript of wa ({wa.id}, engineer), state idle")
    assert "▸ notes to its orchestrator: NOTE-1: halfway" in transcript
    assert "assistant: WORKER-A-DONE" in transcript
    assert "That is everything so far; continue later with since=" in transcript
    (listing,) = await team.tool_results(lead.id, "list_agents")
    assert listing.startswith("Your 2 child agent(s):")
    assert f"- wa ({wa.id}, engineer): idle; " in listing
    assert f"- wb ({wb.id}, engineer): " in listing

    async def replied() -> bool:
        return (await team.orch.agent(wb.id)).extra.get("last_result") == "GOT-HELLO"

    await eventually(replied, what="wb's reply to wa's message")


async def test_a_wait_longer_than_claude_codes_timeout_is_repeated(
    settings: Settings, tmp_path: Path
) -> None:
    tight = settings.model_copy(update={"deck_tool_timeout_seconds": 10})
    async with make_team(tight, tmp_path) as short:
        # Claude Code is told the deck's own timeout: a shorter MCP_TOOL_TIMEOUT
        # in the environment cannot cut a wait.
        server = deck_server(short.orch, _orchestrator())
        assert server["timeout"] == 10_000 and server["type"] == "sdk"
        scenario = short.scenario(
            {
                "name": "slow",
                "turns": [
                    {"reply": [spawn("wa", "TASK-SLOW")]},
                    {"reply": [{"tool_use": {**WAIT, "input": {"agents": ["wa"]}}}]},
                    {
                        "when": {"tool_result_contains": "still waiting"},
                        "repeat": True,
                        "reply": [{"tool_use": {**WAIT, "input": {"agents": ["wa"]}}}],
                    },
                    {
                        "when": {"tool_result_contains": "wait_for_agents: done"},
                        "reply": [{"text": "LEAD-DONE"}],
                    },
                ],
                "conversations": [
                    {
                        "when": {"first_user_text_contains": "TASK-SLOW"},
                        "turns": [{"delay": 13, "reply": [{"text": "SLOW-DONE"}]}],
                    }
                ],
            }
        )
        lead = (await short.lead(scenario)).agent
        done = await short.settled(lead.id, timeout=120)
        assert done.extra["last_result"] == "LEAD-DONE"
        waits = await short.tool_results(lead.id, "wait_for_agents")
        assert waits[0].startswith("wait_for_agents: still waiting after 9s")
        assert (
            "Call wait_for_agents again for the same agents, with timeout_seconds=591" in waits[0]
        )
        assert waits[-1].startswith("wait_for_agents: done") and "SLOW-DONE" in waits[-1]


def _orchestrator() -> Agent:
    return Agent(
        id="x",
        name="x",
        state=AgentState.RUNNING,
        spec=AgentSpec(prompt="p", orchestrator=True),
        cwd="/",
        created_at=0,
        updated_at=0,
    )
