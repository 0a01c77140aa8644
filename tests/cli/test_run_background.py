"""``agentdeck run`` with a background subagent: it is answered until its work is done.

The ``Agent`` tool runs its subagent in the background by default, so the parent's
turn ends (a result) while the subagent still works. The run used to close Claude
Code's input at that first result: the subagent's Write was then decided and
audited as allowed, but the answer could not reach the CLI, which refused the call
("The user doesn't want to take this action right now").
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli

SCENARIO = {
    "name": "background-writer",
    "description": "A background subagent writes a file after the parent's turn ended.",
    "turns": [
        {
            "reply": [
                {
                    "tool_use": {
                        "name": "Agent",
                        "input": {
                            "description": "write a note",
                            "prompt": "BG-SUBTASK: write note.txt",
                            "subagent_type": "general-purpose",
                        },
                    }
                }
            ]
        },
        {"reply": [{"text": "PARENT: the subagent is on it"}]},
        {"reply": [{"text": "PARENT: the subagent finished"}]},
    ],
    "conversations": [
        {
            "when": {"first_user_text_contains": "BG-SUBTASK"},
            "turns": [
                {
                    # After the parent's result, which the old run took as its end.
                    "delay": 1.0,
                    "reply": [
                        {
                            "tool_use": {
                                "name": "Write",
                                "input": {
                                    "file_path": "note.txt",
                                    "content": "from the subagent\n",
                                },
                            }
                        }
                    ],
                },
                {"reply": [{"text": "SUBAGENT: wrote note.txt"}]},
            ],
        }
    ],
}


def test_a_background_subagents_write_is_answered_and_audited(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    scenario = tmp_path / "background.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))

    done = deck(env, "run", "--scenario", str(scenario), "--allow", "Agent", "go", "--json")

    assert done.code == 0, done.err
    outcome = done.json()
    agent = outcome["agent"]
    assert agent["state"] == "done"
    assert outcome["result"]["result"] == "PARENT: the subagent finished"  # its report was told
    assert Path(agent["cwd"], "note.txt").read_text() == "from the subagent\n"
    logs = deck(env, "logs", agent["id"], "--json").out
    assert "want to take this action" not in logs
    audit = deck(env, "audit", "ls", "--agent", agent["id"], "--json").json()
    assert [(e["tool"], e["decision"]) for e in audit] == [("Agent", "allow"), ("Write", "allow")]


SHELL_THEN_WRITE = {
    "name": "background-shell",
    "description": "A background shell; the turn that reports its end writes a file.",
    "turns": [
        {
            "reply": [
                {
                    "tool_use": {
                        "name": "Bash",
                        "input": {
                            "command": "sleep 1; echo slept",
                            "run_in_background": True,
                            "description": "sleep",
                        },
                    }
                }
            ]
        },
        {"reply": [{"text": "PARENT: the shell is on it"}]},
        {
            "reply": [
                {
                    "tool_use": {
                        "name": "Write",
                        "input": {"file_path": "after.txt", "content": "x\\n"},
                    }
                }
            ]
        },
        {"reply": [{"text": "PARENT: the shell finished"}]},
    ],
}


def test_the_turn_that_reports_a_background_shell_is_answered(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    scenario = tmp_path / "shell.yaml"
    scenario.write_text(yaml.safe_dump(SHELL_THEN_WRITE))

    done = deck(env, "run", "--scenario", str(scenario), "--allow", "Bash(sleep *)", "go", "--json")

    assert done.code == 0, done.err
    outcome = done.json()
    assert outcome["result"]["result"] == "PARENT: the shell finished"
    assert Path(outcome["agent"]["cwd"], "after.txt").read_text() == "x\\n"
    logs = deck(env, "logs", outcome["agent"]["id"], "--json").out
    assert "want to take this action" not in logs
