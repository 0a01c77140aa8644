"""Agent templates: parsing, every problem named, applying one to a spec."""

from __future__ import annotations

import pytest

from agentdeck.core.agent import AgentSpec
from agentdeck.core.templates import (
    BODY_MAX,
    apply_template,
    known_tool,
    parse_template,
    split_front_matter,
    tool_list,
)
from agentdeck.errors import TemplateError

GOOD = {
    "name": "reviewer",
    "description": "Reviews changes.",
    "tools": "Read, Grep, Bash",
    "model": "sonnet",
    "profile": "strict",
    "budget_usd": 2,
    "max_turns": 40,
    "workspace": "shared",
    "orchestrator": False,
}


def problems(data: object, body: str = "You review.", stem: str | None = None) -> list[str]:
    with pytest.raises(TemplateError) as caught:
        parse_template(data, body, "x/reviewer.md", scope="project", stem=stem)
    return [str(p) for p in caught.value.problems]


def test_a_claude_code_agent_file_parses_with_agentdecks_own_keys() -> None:
    t = parse_template(GOOD, "\nYou review.\n", "x/reviewer.md", scope="project", stem="reviewer")
    assert (t.name, t.description, t.prompt) == ("reviewer", "Reviews changes.", "You review.")
    assert t.tools == ("Read", "Grep", "Bash")
    assert (t.model, t.profile, t.budget_usd, t.max_turns) == ("sonnet", "strict", 2.0, 40)
    assert (t.workspace, t.orchestrator, t.scope) == ("shared", False, "project")


def test_front_matter_is_split_from_the_body() -> None:
    assert split_front_matter("---\nname: a\n---\nbody\n") == ("name: a\n", "body\n")
    assert split_front_matter("\ufeff---\nname: a\n...\nbody") == ("name: a\n", "body")
    assert split_front_matter("name: a\n---\nbody") is None
    assert split_front_matter("---\nname: a\nno end") is None


def test_every_problem_is_one_line_naming_the_file_and_key() -> None:
    found = problems(
        {
            "name": "Bad_Name",
            "tools": "Read, Teleport",
            "budget_usd": -1,
            "maxTurns": 0,
            "workspace": "cloud",
            "orchestrator": "yes",
            "colour": "red",
        },
        body="",
    )
    assert found == [
        "x/reviewer.md: colour: unknown key; did you mean color? (known: name, description, "
        "tools, disallowedTools, model, permissionMode, maxTurns, skills, mcpServers, hooks, "
        "memory, background, effort, isolation, initialPrompt, color, profile, budget_usd, "
        "max_turns, workspace, orchestrator, output_schema, model_endpoint, "
        "thinking, subagents, memory_review, config_dir, record, auto_compact_at)",
        "x/reviewer.md: name: not a valid name: lowercase letters, digits and "
        "single hyphens, starting with a letter, at most 64 characters",
        "x/reviewer.md: description: missing: say what the agent is for (orchestrators read it)",
        "x/reviewer.md: tools: unknown tool `Teleport` (Claude Code's tools, or mcp__server__tool)",
        "x/reviewer.md: budget_usd: must be a number of USD above 0",
        "x/reviewer.md: maxTurns: must be a whole number of turns, 1 or more",
        "x/reviewer.md: workspace: must be one of new, shared, worktree",
        "x/reviewer.md: orchestrator: must be true or false",
        "x/reviewer.md: the body is empty: it is the agent's system prompt",
    ]


def test_claude_code_keys_are_read_not_refused() -> None:
    """Every key of Claude Code's agent files is one agentdeck honours
    (tests/templates: what each means, bad input, the profile deciding)."""
    t = parse_template({**GOOD, "permissionMode": "plan", "hooks": {}}, "p", "x/reviewer.md")
    assert (t.claude.permission_mode, t.claude.hooks) == ("plan", ())
    assert problems({**GOOD, "disabled": True}) == [
        "x/reviewer.md: disabled: not supported by agentdeck: remove the file (or move it "
        "aside) to disable a template"
    ]


def test_the_name_must_match_the_file_and_the_body_has_a_size_limit() -> None:
    assert problems(GOOD, stem="critic") == [
        "x/reviewer.md: name: differs from the file name critic.md; rename one of them"
    ]
    too_long = problems(GOOD, body="x" * (BODY_MAX + 1))
    assert too_long == [
        f"x/reviewer.md: the body (system prompt) has {BODY_MAX + 1:,} characters; "
        f"at most {BODY_MAX:,}"
    ]


def test_front_matter_that_is_not_a_mapping_is_one_problem() -> None:
    assert problems(["a", "b"]) == ["x/reviewer.md: the front matter is list, not a mapping"]
    assert problems(None) == ["x/reviewer.md: the front matter is nothing, not a mapping"]


def test_tool_names_in_both_forms_and_mcp_and_agent_patterns() -> None:
    assert tool_list("Read, Grep,,Bash ") == ["Read", "Grep", "Bash"]
    assert tool_list(["Read", " Edit"]) == ["Read", "Edit"]
    assert tool_list(3) is None
    for name in ("Read", "Task", "mcp__github__create_issue", "mcp__deck", "Agent(reviewer)"):
        assert known_tool(name), name
    for name in ("read", "Bash(ls)", "mcp_github", "Teleport"):
        assert not known_tool(name), name


def test_max_turns_in_either_spelling_but_not_both_and_inherit_means_no_model() -> None:
    t = parse_template({**GOOD, "max_turns": None, "maxTurns": 7, "model": "inherit"}, "p", "f")
    assert (t.max_turns, t.model) == (7, None)
    assert problems({**GOOD, "maxTurns": 7}) == [
        "x/reviewer.md: maxTurns: give max_turns or maxTurns, not both"
    ]


def test_applying_a_template_keeps_what_the_caller_set() -> None:
    t = parse_template(
        {**GOOD, "disallowedTools": ["WebFetch"], "orchestrator": True}, "You review.", "f"
    )
    plain = apply_template(t, AgentSpec(prompt="go", deny=("Bash(rm:*)",)))
    assert plain.template == "reviewer"
    assert plain.append_system_prompt == "You review."
    assert (plain.model, plain.profile, plain.budget_usd, plain.max_turns) == (
        "sonnet",
        "strict",
        2.0,
        40,
    )
    assert plain.tools == ("Read", "Grep", "Bash")
    assert plain.deny == ("Bash(rm:*)", "WebFetch")
    assert plain.orchestrator and plain.resume_on_restart and plain.workspace == "shared"
    mine = apply_template(
        t,
        AgentSpec(
            prompt="go",
            model="opus",
            profile="permissive",
            budget_usd=0.5,
            max_turns=3,
            append_system_prompt="Be brief.",
        ),
    )
    assert (mine.model, mine.profile, mine.budget_usd, mine.max_turns) == (
        "opus",
        "permissive",
        0.5,
        3,
    )
    assert mine.append_system_prompt == "You review.\n\nBe brief."
