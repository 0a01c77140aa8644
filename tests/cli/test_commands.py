"""The ``agentdeck`` command, run as a subprocess against the scripted model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agentdeck.core.sandbox import SandboxMode
from agentdeck.sandbox.support import support
from tests.cli.test_quick import typer_path
from tests.support.deckcli import deck, deck_env
from tests.support.fs import unwritable

pytestmark = pytest.mark.cli


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


def test_run_json_ls_show_and_logs(env: dict[str, str]) -> None:
    done = deck(env, "run", "--scenario", "demo", "--name", "tidy", "Tidy the notes", "--json")
    assert done.code == 0, done.err
    outcome = done.json()
    agent = outcome["agent"]
    assert agent["state"] == "done" and agent["name"] == "tidy"
    assert outcome["result"]["terminal_reason"] == "completed"
    assert Path(agent["cwd"], "notes.md").read_text().startswith("# Notes")

    listed = deck(env, "ls", "--json").json()
    assert [a["id"] for a in listed] == [agent["id"]]
    shown = deck(env, "show", agent["id"][:8], "--json").json()
    assert shown["id"] == agent["id"]
    assert deck(env, "show", "tidy", "--json").json()["id"] == agent["id"]
    # the default profile sandboxes its agents where this machine can
    expected = "process" if support(SandboxMode.PROCESS).ok else "unavailable"
    assert shown["extra"]["sandbox"] == expected
    assert re.search(rf"sandbox\s+{expected}", deck(env, "show", "tidy").out)

    logs = deck(env, "logs", agent["id"], "--json")
    types = [line.split('"type": "')[1].split('"')[0] for line in logs.out.splitlines()]
    assert types[0] == "agent_spawned" and "tool_called" in types and types[-1] == "state_changed"

    human = deck(env, "logs", agent["id"])
    assert "Write(" in human.out and "turn done: ok" in human.out
    table = deck(env, "ls")
    assert "tidy" in table.out and "done" in table.out


def test_run_shows_live_progress_and_exits_0(env: dict[str, str]) -> None:
    done = deck(env, "run", "--scenario", "demo", "Tidy the notes")
    assert done.code == 0, done.err
    assert "⚙ Edit(" in done.out and "◆ state done" in done.out


def test_run_exits_1_when_the_agent_ends_in_error(env: dict[str, str], tmp_path: Path) -> None:
    scenario = tmp_path / "down.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "down",
                "turns": [{"reply": [{"text": "never"}]}],
                "faults": [{"on_request": 1, "always": True, "http_status": 500}],
            }
        )
    )
    done = deck(env, "run", "--scenario", str(scenario), "hi", "--json")
    assert done.code == 1
    assert done.json()["agent"]["state"] == "error"


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["run", "  "],
        ["run", "x", "--max-turns", "0"],
        ["ls", "--state", "bogus"],
        ["frobnicate"],
    ],
)
def test_bad_usage_exits_2(env: dict[str, str], args: list[str]) -> None:
    done = deck(env, *args)
    assert done.code == 2, (done.out, done.err)
    assert "Traceback" not in done.err


# Numbers and references no command can use: one clear line, exit 2, before any
# store, SQLite integer or Claude Code meets them (the quick path, no daemon).
TOO_MUCH = [
    ["ls", "--limit", "99999999999999999999"],
    ["run", "x", "--budget-usd", "nan"],
    ["run", "x", "--budget-usd", "inf"],
    ["run", "x", "--budget-usd", "1e400"],
    ["logs", "x" * 100_000],
    ["show", "x" * 100_000],
]


@pytest.mark.parametrize("args", TOO_MUCH, ids=lambda a: " ".join(a)[:40])
def test_values_out_of_reach_are_usage_errors(env: dict[str, str], args: list[str]) -> None:
    assert deck(env, "run", "--scenario", "chat", "--name", "x", "Hello!").code == 0  # a row
    done = deck(env, *args)
    assert done.code == 2, (done.out, done.err[-2000:])
    assert "Traceback" not in done.err and done.out == ""
    assert len(done.err) < 2_000  # the reference is not echoed back
    if args[0] != "ls":  # Typer's own usage error, as for --limit 0
        assert done.err.startswith("error: "), done.err
    slow = typer_path(env, *args)  # through the Typer app: refused too
    assert (slow.returncode, slow.stdout) == (2, ""), slow.stderr[-2000:]
    assert "Traceback" not in slow.stderr and len(slow.stderr) < 2_000


def test_unknown_agent_is_one_clear_line(env: dict[str, str]) -> None:
    for command in (["show", "nope"], ["logs", "nope"], ["kill", "nope"], ["send", "nope", "x"]):
        done = deck(env, *command)
        assert done.code == 1
        assert done.err.strip().splitlines()[0] == "error: no agent with id 'nope'"
        assert "Traceback" not in done.err


def test_a_bad_setting_is_one_line_naming_the_variable(env: dict[str, str]) -> None:
    done = deck({**env, "AGENTDECK_HOOK_DEADLINE_SECONDS": "99"}, "ls")
    assert done.code == 1
    assert done.err.splitlines()[0] == (
        "error: invalid setting: AGENTDECK_HOOK_DEADLINE_SECONDS: "
        "Input should be less than or equal to 50"
    )
    assert "Traceback" not in done.err


def test_an_error_quoting_markup_is_printed_as_typed(env: dict[str, str]) -> None:
    done = deck(env, "show", "[/]x[bold]")
    assert done.code == 1
    assert done.err.strip().splitlines()[0] == "error: no agent with id '[/]x[bold]'"
    assert "Traceback" not in done.err


def test_a_scenario_with_a_mistake_names_file_turn_and_problem(
    env: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "oops.yaml"
    bad.write_text("name: oops\nturns:\n  - reply:\n      - text: fine\n  - reply: []\n")
    done = deck(env, "run", "--scenario", str(bad), "hi")
    assert done.code == 2
    assert "oops.yaml" in done.err and "turn 2" in done.err
    assert "Traceback" not in done.err


def test_a_missing_claude_binary_is_reported(env: dict[str, str], tmp_path: Path) -> None:
    env["AGENTDECK_CLAUDE_CLI_PATH"] = str(tmp_path / "no-such-claude")
    done = deck(env, "run", "--scenario", "demo", "hi")
    assert done.code == 1
    assert "Claude Code CLI not found" in done.err and "Traceback" not in done.err


def test_an_unreachable_model_endpoint_fails_fast(env: dict[str, str]) -> None:
    env.update(ANTHROPIC_BASE_URL="http://127.0.0.1:9", ANTHROPIC_API_KEY="sk-test-secret-xyz")
    done = deck(env, "run", "hi", "--json", timeout=60)
    assert done.code == 1
    assert done.json()["agent"]["state"] == "error"
    assert "sk-test-secret-xyz" not in done.out + done.err


def test_an_unwritable_home_is_reported(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "ro"
    home.mkdir()
    env["AGENTDECK_HOME"] = str(home)
    with unwritable(home):
        done = deck(env, "run", "--scenario", "demo", "hi")
    assert done.code == 1
    assert "not writable" in done.err and "AGENTDECK_HOME" in done.err
    assert "Traceback" not in done.err


def test_an_unusable_home_is_reported(env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env["AGENTDECK_HOME"] = str(blocker / "home")
    done = deck(env, "ls")
    assert done.code == 1
    assert "not writable" in done.err and "AGENTDECK_HOME" in done.err
    assert "Traceback" not in done.err
    assert blocker.read_text() == "not a directory"


def test_a_corrupt_database_is_reported_and_left_alone(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "agentdeck.db").write_bytes(b"this is not sqlite" * 100)
    done = deck(env, "ls")
    assert done.code == 1 and "Traceback" not in done.err
    assert "agentdeck.db" in done.err
    assert (home / "agentdeck.db").read_bytes() == b"this is not sqlite" * 100
