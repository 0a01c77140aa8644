"""``agentdeck run --agent`` of a template with ``output_schema: status`` on the
real CLI and the scripted model, then ``agentdeck show``: the structured result
on the agent's row and in both of show's forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli

REPORTER = """---
name: reporter
description: Reports its status as a structured result.
tools: Read
output_schema: status
---
Do the task, then report its status.
"""
SCENARIO = str(Path(__file__).parent / "scenarios" / "structured.yaml")
STATUS = {"status": "COMPLETE", "summary": "The scripted task is complete."}


def test_run_a_reporter_and_show_its_structured_result(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    agents = tmp_path / "claude-config" / "agents"
    agents.mkdir(parents=True)
    (agents / "reporter.md").write_text(REPORTER)
    done = deck(env, "run", "--agent", "reporter", "--scenario", SCENARIO, "go", "--json")
    assert done.code == 0, done.err[-2000:]
    agent = done.json()["agent"]
    assert agent["state"] == "done"
    shown = deck(env, "show", agent["id"], "--json").json()
    assert shown["extra"]["structured_result"] == STATUS
    human = deck(env, "show", agent["id"]).out
    line = next(x for x in human.splitlines() if x.strip().startswith("result"))
    assert json.loads(line.strip().removeprefix("result").strip()) == STATUS


def test_the_scenario_without_a_schema_has_no_structured_result(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "run", "--scenario", SCENARIO, "--name", "plain", "go", "--json")
    assert done.code == 0, done.err[-2000:]
    shown = deck(env, "show", "plain", "--json").json()
    assert "structured_result" not in shown["extra"]
    assert not any(
        x.strip().startswith("result") for x in deck(env, "show", "plain").out.splitlines()
    )


NEVER = """
name: never
turns:
  - reply: [{text: "NO-STRUCTURE-1"}]
  - reply: [{text: "NO-STRUCTURE-2"}]
  - when: {user_text_contains: "does not match"}
    reply: [{text: "NO-STRUCTURE-3"}]
  - reply: [{text: "NO-STRUCTURE-4"}]
  - reply: [{text: "NO-STRUCTURE-5"}]
"""


def test_a_run_with_no_structured_result_is_told_once_then_fails(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    agents = tmp_path / "claude-config" / "agents"
    agents.mkdir(parents=True)
    (agents / "reporter.md").write_text(REPORTER)
    never = tmp_path / "never.yaml"
    never.write_text(NEVER)
    done = deck(env, "run", "--agent", "reporter", "--scenario", str(never), "go", "--json")
    assert done.code == 1, done.err[-2000:]
    agent = done.json()["agent"]
    assert agent["state"] == "error"
    assert "structured result does not match" in agent["last_error"]
    assert "structured_result" not in agent["extra"]
    logs = deck(env, "logs", agent["id"], "--json").out.splitlines()
    sent = [json.loads(x)["data"]["text"] for x in logs if '"user_message_sent"' in x]
    assert len([t for t in sent if "does not match the required output schema" in t]) == 1


def test_run_output_schema_names_a_builtin_or_a_file(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    done = deck(env, "run", "--output-schema", "status", "--scenario", SCENARIO, "go", "--json")
    assert done.code == 0, done.err[-2000:]
    agent = done.json()["agent"]
    assert agent["extra"]["structured_result"] == STATUS
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"type": "object", "required": ["status"]}))
    done = deck(env, "run", "--output-schema", str(own), "--scenario", SCENARIO, "go", "--json")
    assert done.code == 0, done.err[-2000:]
    assert done.json()["agent"]["extra"]["structured_result"] == STATUS


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "object", "$ref": "https://evil.example/s.json"}, "only point inside it"),
        ({"type": "object", "$id": "file:///etc/"}, "may not set $id"),
        ({"type": "object", "description": "x" * 20_000}, "larger than"),
        ("not json {", "is not a JSON file"),
    ],
)
def test_run_refuses_a_hostile_schema_file(tmp_path: Path, schema: object, said: str) -> None:
    env = deck_env(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(schema if isinstance(schema, str) else json.dumps(schema))
    done = deck(env, "run", "--output-schema", str(bad), "--scenario", SCENARIO, "go")
    assert done.code == 2, done.err[-2000:]
    assert said in done.err and "Traceback" not in done.err
    assert deck(env, "ls", "--json").json() == []  # nothing started
