"""The tree's rules on the real CLI: a child never gets more than its parent (its
rules, its budget), depth and fan-out limits, killing a tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.core.agent import Agent, AgentState
from agentdeck.runner import procs
from agentdeck.settings import Settings
from tests.orchestration.conftest import Team, make_team
from tests.support.waiting import eventually

# Its workers answer in plain text: the built-in engineer's structured status would
# have each of them told again (more turns, more cost: the budgets here are counted).
pytestmark = [pytest.mark.anyio, pytest.mark.cli, pytest.mark.usefixtures("plain_engineer")]


def spawn(name: str, prompt: str, template: str = "engineer", **extra: object) -> dict[str, object]:
    return {
        "tool_use": {
            "name": "mcp__deck__spawn_agent",
            "input": {"prompt": prompt, "template": template, "name": name, **extra},
        }
    }


def wait(*names: str) -> dict[str, object]:
    return {"tool_use": {"name": "mcp__deck__wait_for_agents", "input": {"agents": list(names)}}}


def bash(command: str) -> dict[str, object]:
    return {"tool_use": {"name": "Bash", "input": {"command": command, "description": "run"}}}


async def test_a_parents_deny_rule_stops_its_childs_call(team: Team) -> None:
    scenario = team.scenario(
        {
            "name": "deny",
            "turns": [
                {"reply": [spawn("wa", "TASK-A")]},
                {"reply": [wait("wa")]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-A"},
                    # `echo` is read-only: the default profile allows it, the parent does not.
                    "turns": [
                        {"reply": [bash("echo CHILD-RAN")]},
                        {"reply": [bash("pwd")]},
                        {"reply": [{"text": "WORKER-DONE"}]},
                    ],
                }
            ],
        }
    )
    lead = (await team.lead(scenario, deny=("Bash(echo:*)",))).agent
    await team.settled(lead.id)
    wa = await team.child(lead.id, "wa")
    denied = [e.data for e in await team.events(wa.id, "permission_resolved")]
    assert [d["decision"] for d in denied] == ["deny"]
    assert denied[0]["rule"] == "Bash(echo:*)"
    assert f"(the rules of its parent {lead.name})" in denied[0]["reason"]
    outputs = [str(e.data["output"]) for e in await team.events(wa.id, "tool_returned")]
    assert not any("CHILD-RAN" in o and "hook error" not in o for o in outputs)
    cwd = (await team.orch.agent(wa.id)).cwd
    assert cwd in [o.strip() for o in outputs]  # pwd ran
    # The parent itself is held to its own rule too, and its tools bound only itself.
    assert "Bash" in lead.spec.tools and "Write" not in lead.spec.tools


async def test_a_childs_budget_is_carved_from_what_its_parent_has_left(team: Team) -> None:
    # A request of the engineer costs about $0.06 on the scripted model (its system
    # prompt is some 14,000 tokens), the orchestrator's turn about $0.10. B's $0.15
    # lasts three requests; the tree's $0.50 holds what they all spend (about $0.33),
    # so B alone is stopped (a tree over its budget stops the lead, which closes A).
    scenario = team.scenario(
        {
            "name": "carve",
            "turns": [
                {
                    "reply": [
                        spawn("wa", "TASK-A", budget_usd=0.35),
                        spawn("wb", "TASK-B", budget_usd=0.3),
                        spawn("wc", "TASK-C"),
                    ]
                },
                {"reply": [wait("wa", "wb")]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-A"},
                    "turns": [{"reply": [{"text": "A-DONE"}]}],
                },
                {
                    "when": {"first_user_text_contains": "TASK-B"},
                    "turns": [
                        *({"reply": [bash(f"echo {n}")]} for n in range(10)),
                        {"reply": [{"text": "B-DONE"}]},
                    ],
                },
            ],
        }
    )
    lead = (await team.lead(scenario, budget_usd=0.5, owner="alice")).agent
    await team.settled(lead.id)
    wa, wb = await team.child(lead.id, "wa"), await team.child(lead.id, "wb")
    assert wa.spec.owner == wb.spec.owner == "alice"  # its user pays for its children
    assert wa.spec.budget_usd == pytest.approx(0.35)
    assert wb.spec.budget_usd == pytest.approx(0.15)  # asked for 0.30; 0.15 was left
    (refused,) = [
        e.data
        for e in await team.events(lead.id, "tool_returned")
        if "budget is spent or given to your other children" in str(e.data["output"])
    ]
    assert refused["is_error"] is True
    assert [c.name for c in await team.children(lead.id)] == ["wa", "wb"]

    # B's turn ends (idle, which wakes the lead) just before its guard stops it.
    async def stopped() -> Agent | None:
        found = await team.orch.agent(wb.id)
        return found if found.state == AgentState.ERROR else None

    b = await eventually(stopped, timeout=30, what="wb to be stopped by its budget")
    assert "budget exceeded" in (b.last_error or "")
    assert "B-DONE" not in [e.data["text"] for e in await team.events(wb.id, "assistant_text")]
    # Neither A nor the lead paid for B's overspending.
    for other in (wa.id, lead.id):
        assert (await team.orch.agent(other)).state == AgentState.IDLE
        assert await team.events(other, "error_occurred") == []


async def test_depth_and_fan_out_limits_are_told_to_the_model(
    settings: Settings, tmp_path: Path
) -> None:
    tight = settings.model_copy(update={"max_depth": 1, "max_children": 1})
    async with make_team(tight, tmp_path) as team:
        scenario = team.scenario(
            {
                "name": "limits",
                "turns": [
                    {"reply": [spawn("sub", "SUB-TASK", "orchestrator"), spawn("second", "X")]},
                    {"reply": [wait("sub")]},
                    {"reply": [{"text": "LEAD-DONE"}]},
                ],
                "conversations": [
                    {
                        "when": {"first_user_text_contains": "SUB-TASK"},
                        "turns": [
                            {"reply": [spawn("deeper", "Y")]},
                            {"reply": [{"text": "SUB-DONE"}]},
                        ],
                    }
                ],
            }
        )
        lead = (await team.lead(scenario)).agent
        await team.settled(lead.id)
        sub = await team.child(lead.id, "sub")
        await team.settled(sub.id)
        spawned = [str(o) for o in await team.tool_results(lead.id, "spawn_agent")]
        assert spawned[0].startswith(f"Started sub ({sub.id}, orchestrator)")
        assert spawned[1].startswith("cannot spawn: you already have 1 live children")
        (deeper,) = await team.tool_results(sub.id, "spawn_agent")
        assert deeper.startswith("cannot spawn: the agent tree may be 1 levels deep")
        assert await team.children(sub.id) == []


async def test_killing_a_parent_kills_its_tree_unless_told_to_keep_them(team: Team) -> None:
    sleeper = bash("python3 -c 'import time; time.sleep(120)'")
    scenario = team.scenario(
        {
            "name": "kill",
            "turns": [
                {"reply": [spawn("wa", "TASK-A"), spawn("wb", "TASK-B")]},
                {"reply": [wait("wa", "wb")]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {"when": {"first_user_text_contains": "TASK-"}, "turns": [{"reply": [sleeper]}]}
            ],
        }
    )
    lead = (await team.lead(scenario, allow=("Bash(python3:*)",))).agent

    async def both_in_their_tool() -> list[int] | None:
        kids = await team.children(lead.id)
        pids = [c.pid for c in kids if c.current_tool and c.pid]
        return pids if len(pids) == 2 else None

    pids = await eventually(both_in_their_tool, timeout=90, what="two workers in their tool")
    trees = [p.pid for pid in pids for p in procs.process_tree(pid)]
    wa, wb = await team.child(lead.id, "wa"), await team.child(lead.id, "wb")
    kept = await team.orch.kill_tree(await team.orch.agent(wa.id), children=False)
    assert kept.state == AgentState.KILLED
    killed = await team.orch.kill_tree(await team.orch.agent(lead.id))
    assert killed.state == AgentState.KILLED
    assert (await team.orch.agent(wb.id)).state == AgentState.KILLED
    assert procs.wait_gone(trees, timeout=20) == []


async def test_a_child_killed_while_it_starts_ends_killed_with_no_process_left(
    team: Team,
) -> None:
    scenario = team.scenario(
        {
            "name": "early-kill",
            "turns": [
                {"reply": [spawn("wa", "TASK-A")]},
                # At once: its Claude Code process is still starting.
                {
                    "reply": [
                        {"tool_use": {"name": "mcp__deck__kill_agent", "input": {"agent": "wa"}}}
                    ]
                },
                {"reply": [wait("wa")]},
                {"reply": [{"text": "LEAD-DONE"}]},
            ],
            "conversations": [
                {
                    "when": {"first_user_text_contains": "TASK-A"},
                    "turns": [{"reply": [{"text": "A"}]}],
                }
            ],
        }
    )
    lead = (await team.lead(scenario)).agent
    done = await team.settled(lead.id)
    assert done.extra["last_result"] == "LEAD-DONE"
    wa = await team.orch.agent((await team.child(lead.id, "wa")).id)
    assert wa.state == AgentState.KILLED and wa.pid is None
    (killed,) = await team.tool_results(lead.id, "kill_agent")
    assert killed.startswith(f"Killed wa ({wa.id}, engineer)")
    (waited,) = await team.tool_results(lead.id, "wait_for_agents")
    assert waited.startswith("wait_for_agents: done") and "state killed" in waited
    assert [e.data["text"] for e in await team.events(wa.id, "user_message_sent")] == []
    spawned = team.runner.sessions[wa.id].spawned_pid
    assert spawned is None or not procs.is_running(spawned)
