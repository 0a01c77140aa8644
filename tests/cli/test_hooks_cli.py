"""``agentdeck hooks install / uninstall / status / print``, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentdeck.hooks.config import HOOK_EVENTS
from agentdeck.hooks.install import MARKER, client_path
from tests.support.deckcli import deck, deck_env

# Claude Code waits on PreToolUse; without a daemon the client must give up fast.
CLIENT_BUDGET_SECONDS = 1.0


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def test_install_status_uninstall(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    in_project = ("--scope", "project", "--project", str(project))
    original = b'{\n   "model": "opus"\n}'
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original)

    done = deck(env, "hooks", "install", *in_project)
    assert done.code == 0, done.err
    assert done.out.splitlines()[0] == f"installed agentdeck hooks in {path}"
    assert "backup of the previous file: " in done.out
    assert "governance: deny-and-ask (AGENTDECK_HOOK_GOVERNANCE)" in done.out
    assert (tmp_path / "home" / "hooks.json").exists()
    again = deck(env, "hooks", "install", *in_project, "--json")
    assert again.code == 0, again.err
    assert again.json()["outcome"] == "unchanged" and again.json()["backup"] is None

    status = deck(env, "hooks", "status", "--project", str(project), "--json")
    assert status.code == 0, status.err
    report = status.json()
    by_scope = {s["scope"]: s for s in report["scopes"]}
    assert by_scope["project"]["installed"] and by_scope["project"]["events"] == list(HOOK_EVENTS)
    assert by_scope["project"]["current"] and by_scope["project"]["interpreter_exists"]
    assert not by_scope["local"]["installed"] and not by_scope["user"]["installed"]
    assert by_scope["user"]["path"] == str(tmp_path / "claude-config" / "settings.json")
    assert report["hooks_config_exists"] and report["daemon_listening"] is False
    human = deck(env, "hooks", "status", "--project", str(project))
    assert f"project {path}: installed for {len(HOOK_EVENTS)} events" in human.out
    assert "no daemon listening" in human.out
    assert "Claude Code's own rules decide every other call" in human.out
    assert (report["governance"], report["approval_seconds"]) == ("deny-and-ask", 40.0)
    full = deck(env | {"AGENTDECK_HOOK_GOVERNANCE": "full"}, "hooks", "status")
    assert "governance: full (AGENTDECK_HOOK_GOVERNANCE)" in full.out

    gone = deck(env, "hooks", "uninstall", *in_project)
    assert gone.code == 0, gone.err
    assert gone.out.strip() == f"restored {path} to what it was before install"
    assert path.read_bytes() == original
    nothing = deck(env, "hooks", "uninstall", *in_project)
    assert nothing.code == 0, nothing.err
    assert nothing.out.strip() == f"agentdeck hooks are not installed in {path}; nothing to do"


def test_dry_run_prints_a_diff_and_writes_nothing(
    env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    done = deck(env, "hooks", "install", "--scope", "local", "--project", str(project), "--dry-run")
    assert done.code == 0, done.err
    assert done.out.startswith("--- /dev/null\n+++ ")
    assert sum(MARKER in line for line in done.out.splitlines()) == len(HOOK_EVENTS)
    assert "dry run: nothing written" in done.err
    assert list(project.iterdir()) == [] and not (tmp_path / "home").exists()


def test_a_broken_settings_file_is_one_error_line_and_stays_as_it_was(
    env: dict[str, str], project: Path
) -> None:
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_bytes(b'{"permissions": {"allow": ["Bash(ls)"],}}')
    done = deck(env, "hooks", "install", "--scope", "local", "--project", str(project))
    assert done.code == 1 and done.out == ""
    first, *rest = done.err.splitlines()
    assert first.startswith(f"error: {path} is not valid JSON")
    assert rest == ["  fix or move the file, then try again; it was left untouched"]
    assert path.read_bytes() == b'{"permissions": {"allow": ["Bash(ls)"],}}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.local.json"]


def test_user_scope_is_the_default_and_print(
    env: dict[str, str], tmp_path: Path, project: Path
) -> None:
    done = deck(env, "hooks", "install", "--project", str(project))  # no --scope
    assert done.code == 0, done.err
    user_file = tmp_path / "claude-config" / "settings.json"
    assert done.out.splitlines()[0] == f"installed agentdeck hooks in {user_file}"
    assert list(project.iterdir()) == []  # nothing machine-specific in the project
    printed = deck(env, "hooks", "print")
    assert printed.code == 0, printed.err
    fragment = json.loads(printed.out)
    assert json.loads(user_file.read_text()) == fragment
    assert list(fragment["hooks"]) == list(HOOK_EVENTS)
    command = fragment["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.startswith(f"{sys.executable} -S {client_path()} ")
    assert deck(env, "hooks", "uninstall").code == 0
    assert not user_file.exists()


def test_user_scope_follows_claude_config_dir(env: dict[str, str], tmp_path: Path) -> None:
    del env["AGENTDECK_CLAUDE_CONFIG_DIR"]
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "claude-own")
    done = deck(env, "hooks", "install", "--json")
    assert done.code == 0, done.err
    assert done.json()["path"] == str(tmp_path / "claude-own" / "settings.json")
    status = deck(env, "hooks", "status", "--json").json()
    [user] = [s for s in status["scopes"] if s["scope"] == "user"]
    assert user["installed"] and user["timeout_current"] is True


def test_the_scope_help_warns_that_project_settings_are_committed(env: dict[str, str]) -> None:
    done = deck(env, "hooks", "install", "--help")
    assert done.code == 0, done.err
    text = " ".join(done.out.split())
    assert "user (default)" in text
    assert "absolute paths" in text and "usually committed" in text


def test_status_says_when_an_installed_timeout_would_let_tools_run(
    env: dict[str, str], tmp_path: Path
) -> None:
    """An install from before the fixed timeout, and a deadline raised since."""
    assert deck(env, "hooks", "install").code == 0
    user_file = tmp_path / "claude-config" / "settings.json"
    data = json.loads(user_file.read_text())
    for groups in data["hooks"].values():
        groups[0]["hooks"][0]["timeout"] = 5
    user_file.write_text(json.dumps(data))

    done = deck(env | {"AGENTDECK_HOOK_DEADLINE_SECONDS": "10"}, "hooks", "status")
    assert done.code == 0, done.err
    [line] = [line for line in done.out.splitlines() if line.startswith("user")]
    assert "Claude Code's timeout for it is 5 s, not above the client's 10 s deadline" in line
    assert "run install again" in line
    report = deck(env, "hooks", "status", "--json").json()
    assert report["timeout"] == 60
    [user] = [s for s in report["scopes"] if s["scope"] == "user"]
    assert user["timeouts"] == [5] and user["timeout_current"] is False


def test_a_scope_that_does_not_exist_is_bad_usage(env: dict[str, str]) -> None:
    done = deck(env, "hooks", "install", "--scope", "global")
    assert done.code == 2 and "global" in done.err


@pytest.mark.skipif(not client_path().exists(), reason="the hook client is not there yet")
def test_the_installed_command_runs_and_lets_go_without_a_daemon(
    env: dict[str, str], project: Path
) -> None:
    assert deck(env, "hooks", "install", "--scope", "project", "--project", str(project)).code == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["PreToolUse"]
    payload = {
        "session_id": "dd55a02e-0000-4000-8000-000000000001",
        "transcript_path": str(project / "session.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo hooked", "description": "echo"},
        "tool_use_id": "toolu_fake_438",
    }
    started = time.monotonic()
    done = subprocess.run(
        ["/bin/sh", "-c", group["hooks"][0]["command"]],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=group["hooks"][0]["timeout"],
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert elapsed < CLIENT_BUDGET_SECONDS, f"the client took {elapsed:.2f}s without a daemon"
    assert done.stdout == ""  # the default fallback: Claude Code's own rules decide
