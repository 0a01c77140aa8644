"""core.skills.offered: the skills an agent was offered, from Claude Code's init
message (every skill it found) and the template's ``skills`` (the filter)."""

from __future__ import annotations

from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.skills import MAX_OFFERED, OFFERED, offered

INIT = {
    "tools": ["Read", "Bash", "Skill"],
    "skills": ["greet", "agentdeck:status-report", "agentdeck:run-tests", "lint"],
}


def test_without_a_templates_list_every_skill_listed_is_offered() -> None:
    assert offered(INIT, ()) == ["greet", "agentdeck:status-report", "agentdeck:run-tests", "lint"]


def test_a_templates_list_filters_plain_names_falling_back_to_the_built_in() -> None:
    wanted = ("greet", "status-report", "agentdeck:run-tests", "absent")
    assert offered(INIT, wanted) == ["greet", "agentdeck:status-report", "agentdeck:run-tests"]


def test_a_plain_name_the_project_has_is_the_projects_not_the_built_in() -> None:
    init = {"tools": ["Skill"], "skills": ["run-tests", "agentdeck:run-tests"]}
    assert offered(init, ("run-tests",)) == ["run-tests"]


def test_no_skill_tool_no_skills() -> None:
    assert offered({"tools": ["Read"], "skills": ["greet"]}, ()) == []
    assert offered({"tools": ["Skill"]}, ()) == []
    assert offered({"tools": ["Skill"], "skills": "greet"}, ()) == []


def test_hostile_names_are_left_out_and_the_list_is_bounded() -> None:
    bad = ["../etc", "Evil", "x\x1b[2J", "a:b:c", "", 7, None, "ok-name", "ok-name"]
    assert offered({"skills": bad}, ()) == ["ok-name"]
    many = [f"s{i}" for i in range(MAX_OFFERED + 20)]
    assert offered({"skills": many}, ()) == many[:MAX_OFFERED]


def test_the_agent_record_reads_them_from_its_extra() -> None:
    spec = AgentSpec(prompt="p")
    agent = Agent("a1", "n", AgentState.IDLE, spec, "/w", 0.0, 0.0, extra={OFFERED: ["greet"]})
    assert agent.skills == ("greet",)
    assert Agent.from_dict(agent.to_dict()).skills == ("greet",)
    assert agent.with_changes(extra={OFFERED: "greet"}).skills == ()
    assert agent.with_changes(extra={}).skills == ()
