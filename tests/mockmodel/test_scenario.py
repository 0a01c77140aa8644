"""Scenario files: every shipped one loads; every kind of mistake is named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.errors import ScenarioError
from agentdeck.mockmodel import (
    MockModel,
    TextBlock,
    ToolUseBlock,
    builtin_scenario_names,
    builtin_scenario_path,
    load_scenario,
    parse_scenario,
    write_workspace,
)

EXPECTED_BUILTINS = {
    "big-output",
    "chat",
    "demo",
    "fix-test",
    "long-tool",
    "slow-stream",
    "three-turns",
}


def test_builtin_names() -> None:
    assert set(builtin_scenario_names()) >= EXPECTED_BUILTINS


@pytest.mark.parametrize("name", sorted(EXPECTED_BUILTINS))
def test_builtins_load_and_document_their_needs(name: str) -> None:
    scenario = load_scenario(builtin_scenario_path(name))
    assert scenario.name == name
    assert scenario.turns
    head = builtin_scenario_path(name).read_text().splitlines()[:3]
    assert any(line.startswith("# Needs:") for line in head)


def test_unknown_builtin_lists_available() -> None:
    with pytest.raises(ScenarioError) as info:
        builtin_scenario_path("nope")
    assert "nope" in str(info.value)
    assert "demo" in str(info.value) and "fix-test" in str(info.value)


def test_existing_path_is_used_as_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("turns: [{reply: [{text: hi}]}]\n")
    assert builtin_scenario_path(str(path)) == path
    scenario = load_scenario(str(path))
    assert scenario.name == "mine"  # defaults to the file stem
    assert scenario.turns[0].reply == (TextBlock("hi"),)


def test_full_vocabulary_parses() -> None:
    data = {
        "name": "full",
        "description": "d",
        "match": {"first_user_text_contains": "fix"},
        "workspace": {"files": {"a/b.txt": "x"}},
        "turns": [
            {"reply": [{"thinking": "hmm"}, {"text": "t"}]},
            {
                "when": {"tool_result_contains": "x", "user_text_contains": "y"},
                "delay": 0.5,
                "chunk_delay": 0.01,
                "reply": [{"tool_use": {"name": "mcp__s__t", "input": {}, "id": "toolu_1"}}],
            },
        ],
        "conversations": [
            {"when": {"system_prompt_contains": "REVIEWER"}, "turns": [{"reply": [{"text": "r"}]}]}
        ],
        "faults": [
            {"on_request": 2, "http_status": 429, "retry_after": 0},
            {"on_request": 1, "times": 3, "http_status": 500, "message": "boom"},
            {"on_request": 1, "always": True, "http_status": 529},
            {"on_request": 3, "malformed_sse": True},
            {"on_request": 1, "disconnect": True},
            {"on_request": 1, "sse_error": "overloaded_error"},
            {"on_request": 1, "delay": 2.0},
            {"on_request": 1, "hang": True},
        ],
    }
    scenario = parse_scenario(data, "full.yaml")
    assert scenario.turns[1].reply == (ToolUseBlock("mcp__s__t", {}, "toolu_1"),)
    assert scenario.turns[1].delay == 0.5
    assert [f.kind for f in scenario.faults] == [
        "http_status=429",
        "http_status=500",
        "http_status=529",
        "malformed_sse",
        "disconnect",
        "sse_error=overloaded_error",
        "delay",
        "hang",
    ]
    times = scenario.faults[1]
    assert [times.applies_to(n) for n in (1, 2, 3, 4)] == [True, True, True, False]
    always = scenario.faults[2]
    assert always.applies_to(1) and always.applies_to(99)
    assert not scenario.faults[0].applies_to(1) and not scenario.faults[0].applies_to(3)


def _turns(*turns: object) -> dict[str, object]:
    return {"name": "bad", "turns": list(turns)}


OK_TURN = {"reply": [{"text": "ok"}]}


@pytest.mark.parametrize(
    ("data", "turn", "problem"),
    [
        ({"name": "x", "turns": [OK_TURN], "colour": 1}, None, "unknown key(s) `colour`"),
        ({"name": "x"}, None, "missing 'turns'"),
        ({"name": "has space", "turns": [OK_TURN]}, None, "'name' must match"),
        (_turns(OK_TURN, {"when": {"tool_result_contains": "x"}}), 2, "turn has no 'reply'"),
        (_turns(OK_TURN, {"reply": [], "x": 1}), 2, "unknown key(s) `x`"),
        (_turns({"reply": []}), 1, "non-empty list of blocks"),
        (_turns(OK_TURN, OK_TURN, {"reply": [{"txt": "a"}]}), 3, "unknown block kind 'txt'"),
        (_turns({"reply": [{"tool_use": {"input": {}}}]}), 1, "missing or empty 'name'"),
        (_turns({"reply": [{"tool_use": {"name": "Bash"}}]}), 1, "missing 'input'"),
        (
            _turns({"reply": [{"tool_use": {"name": "Bash", "input": "ls"}}]}),
            1,
            "expected a mapping",
        ),
        (_turns({"reply": [{"text": "a", "tool_use": {}}]}), 1, "exactly one key"),
        (
            _turns({"when": {"tool_output": "x"}, "reply": [{"text": "a"}]}),
            1,
            "unknown when key(s) `tool_output`",
        ),
        (_turns({"when": {}, "reply": [{"text": "a"}]}), 1, "empty condition"),
        (_turns({"delay": -1, "reply": [{"text": "a"}]}), 1, "seconds >= 0"),
    ],
)
def test_turn_errors_name_file_turn_and_problem(
    data: dict[str, object], turn: int | None, problem: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "scen.yaml")
    err = info.value
    assert err.file == "scen.yaml"
    assert err.turn == turn
    assert problem in err.problem
    assert str(err).startswith("scen.yaml, turn " if turn else "scen.yaml: ")


def test_turn_locator_is_zero_based_and_turn_number_one_based() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_turns(OK_TURN, {"reply": [{"text": "a"}, {"bogus": 1}]}), "s.yaml")
    assert str(info.value).startswith("s.yaml, turn 2: turns[1].reply[1]: unknown block kind")


def test_conversation_turn_errors_are_located() -> None:
    data = {"name": "c", "turns": [OK_TURN], "conversations": [{"when": {"x": "y"}, "turns": []}]}
    with pytest.raises(ScenarioError, match=r"conversations\[0\]\.when: unknown when key"):
        parse_scenario(data, "c.yaml")
    data["conversations"] = [{"turns": [OK_TURN]}]
    with pytest.raises(ScenarioError, match="needs 'when'"):
        parse_scenario(data, "c.yaml")


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        ({"on_request": 0, "http_status": 500}, "'on_request' must be an integer >= 1"),
        ({"http_status": 500}, "'on_request' must be"),
        ({"on_request": 1, "http_status": 200}, "400-599"),
        ({"on_request": 1, "http_status": 500, "hang": True}, "choose one of"),
        ({"on_request": 1}, "no fault given"),
        ({"on_request": 1, "retry_after": 1, "hang": True}, "'retry_after' only applies"),
        ({"on_request": 1, "hang": "yes"}, "'hang' must be true or false"),
        ({"on_request": 1, "times": 0, "hang": True}, "'times' must be"),
        ({"on_request": 1, "explode": True}, "unknown key(s) `explode`"),
    ],
)
def test_fault_errors(fault: dict[str, object], problem: str) -> None:
    data = {"name": "f", "turns": [OK_TURN], "faults": [{"on_request": 1, "hang": True}, fault]}
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "f.yaml")
    assert "faults[1]" in info.value.problem
    assert problem in info.value.problem


def test_workspace_paths_must_stay_inside() -> None:
    for rel in ("../x", "/etc/passwd", "a/../../b"):
        data = {"name": "w", "turns": [OK_TURN], "workspace": {"files": {rel: ""}}}
        with pytest.raises(ScenarioError, match="relative path inside"):
            parse_scenario(data, "w.yaml")


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nturns:\n  - reply: [text: 'a'\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == str(path)
    assert "invalid YAML at line" in info.value.problem


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nturns:\n  - reply: [{text: a}]\n  - {}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}, turn 2: turns[1]: turn has no 'reply'"


def test_duplicate_names_are_refused() -> None:
    demo = load_scenario("demo")
    with pytest.raises(ScenarioError, match="already used"):
        MockModel([demo, demo])


def test_write_workspace(tmp_path: Path) -> None:
    scenario = load_scenario("fix-test")
    write_workspace(scenario, tmp_path / "ws")
    assert (tmp_path / "ws" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (tmp_path / "ws" / "test_calc.py").exists()
