"""``replay --template``: the spec a replay runs as a template would (pure, no CLI)."""

from __future__ import annotations

from typing import Any

from agentdeck.core.agent import AgentSpec
from agentdeck.core.templates import apply_template, parse_template
from agentdeck.runner.recording.replay_template import recorded_model, spec_as_template, task_of

FRONT = {"name": "t", "description": "a template"}
RECORDED = AgentSpec(
    prompt="fix the bug",
    cwd="/w",
    project="/w",
    allow=("Bash",),
    deny=("WebFetch",),
    tools=("Bash", "Read"),
    append_system_prompt="recorded system prompt",
    profile="default",
    model="sonnet",
    owner="local",
)


def _as(front: dict[str, Any], profile: str | None = None, body: str = "You fix bugs.") -> Any:
    template = parse_template({**FRONT, **front}, body, "p/.claude/agents/t.md", stem="t")
    return spec_as_template(template, RECORDED, profile=profile, recorded_model="claude-x")


def test_the_spec_is_the_templates_with_the_recorded_task() -> None:
    spec, notes = _as({"tools": "Read, Edit", "disallowedTools": "Bash", "max_turns": 3})
    assert (spec.prompt, spec.cwd, spec.project, spec.owner) == ("fix the bug", "/w", "/w", "local")
    assert spec.tools == ("Read", "Edit") and spec.deny == ("Bash",)  # not the recorded ones
    assert spec.allow == () and spec.append_system_prompt == "You fix bugs."
    assert spec.template == "t" and spec.max_turns == 3 and spec.model is None
    assert notes[0] == "replayed as template t (p/.claude/agents/t.md)"
    assert any(n.startswith("the system prompt differs") for n in notes)
    assert "tools: Read, Edit (recorded: Bash, Read)" in notes


def test_an_explicit_profile_wins_over_the_templates_and_neither_is_the_default() -> None:
    assert _as({"profile": "strict"})[0].profile == "strict"
    spec, notes = _as({"profile": "strict"}, profile="/p/mine.yaml")
    assert spec.profile == "/p/mine.yaml" and "profile: /p/mine.yaml (recorded: default)" in notes
    spec, notes = _as({})
    assert spec.profile is None and "profile: the settings' default (recorded: default)" in notes


def test_what_the_cassette_answers_for_is_said_not_used() -> None:
    endpoint = {"base_url": "https://models.example.com", "api_key_env": "EXAMPLE_KEY"}
    spec, notes = _as(
        {"model": "opus", "orchestrator": True, "record": True, "model_endpoint": endpoint}
    )
    assert spec.model_endpoint is None and not spec.orchestrator and not spec.record
    shown = "\n".join(notes)
    assert "model opus: the answers are the recorded model's (claude-x)" in shown
    assert "model endpoint is not used" in shown and "its deck tools are not given" in shown


def test_a_template_with_the_recorded_prompt_and_tools_notes_no_difference() -> None:
    spec, notes = _as({"tools": "Bash, Read", "profile": "default"}, body="recorded system prompt")
    assert notes == ["replayed as template t (p/.claude/agents/t.md)"]
    _, notes = _as({"initialPrompt": "Read the README first."})
    assert any("first prompt differs" in n for n in notes)


def test_the_recorded_templates_initial_prompt_is_replaced_by_the_new_ones() -> None:
    old = parse_template({**FRONT, "initialPrompt": "Old first."}, "b", "x/t.md", stem="t")
    recorded = apply_template(old, AgentSpec(prompt="fix the bug"))
    assert recorded.prompt == "Old first.\n\nfix the bug" and task_of(recorded) == "fix the bug"
    new = parse_template({**FRONT, "initialPrompt": "New first."}, "b", "y/t.md", stem="t")
    spec, _ = spec_as_template(new, recorded, profile=None, recorded_model=None)
    assert spec.prompt == "New first.\n\nfix the bug"
    assert task_of(apply_template(old, AgentSpec(prompt=""))) == ""
    assert task_of(RECORDED) == "fix the bug"


def test_the_recorded_model_is_the_first_request_that_names_one() -> None:
    assert recorded_model([None, {"x": 1}, {"model": "m1"}, {"model": "m2"}]) == "m1"
    assert recorded_model([]) is None
