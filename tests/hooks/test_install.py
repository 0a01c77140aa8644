"""The settings.json installer, on real files in tmp_path."""

from __future__ import annotations

import json
import math
import os
import shlex
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentdeck.core.policy import Decision
from agentdeck.errors import ConfigError
from agentdeck.hooks import hookclient_impl as client
from agentdeck.hooks.config import HOOK_EVENTS, write_client_config
from agentdeck.hooks.install import (
    CLAUDE_TIMEOUT_SECONDS,
    MANIFEST_NAME,
    MARKER,
    Outcome,
    Scope,
    client_path,
    daemon_listening,
    hook_command,
    hooks_settings,
    install,
    scope_status,
    settings_path,
    timeout_problem,
    uninstall,
)
from agentdeck.settings import Settings
from tests.support.fs import unwritable

FOREIGN_HOOK = {"type": "command", "command": "echo mine"}
OLD_COMMAND = (
    "/old/venv/bin/python -S /old/site-packages/agentdeck/hooks/client.py /old/home " + MARKER
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def settings_file(project: Path) -> Path:
    return project / ".claude" / "settings.json"


def write(project: Path, raw: bytes) -> Path:
    path = settings_file(project)
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(raw)
    return path


def ours(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Event → our hook entries in a parsed settings file."""
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in data.get("hooks", {}).items():
        for g in groups:
            for h in g["hooks"]:
                if MARKER in h.get("command", ""):
                    found.setdefault(event, []).append(h)
    return found


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.agentdeck-backup-*"))


# --- the command and the fragment ---------------------------------------------------


def test_the_command_is_the_absolute_interpreter_the_client_and_the_home(
    settings: Settings,
) -> None:
    command = hook_command(settings)
    assert command.endswith(" " + MARKER)
    argv = shlex.split(command, comments=True)
    assert argv == [sys.executable, "-S", str(client_path()), str(settings.home_dir)]
    assert Path(argv[0]).is_absolute() and argv[2].endswith("agentdeck/hooks/client.py")


def test_sh_reads_the_command_quoting_and_comment_as_meant(tmp_path: Path) -> None:
    # A home with a space and a quote, run through /bin/sh as Claude Code does:
    # printf shows the words the shell passed, the marker comment being none of them.
    odd = Settings(home=tmp_path / "it's a home")
    done = subprocess.run(
        ["/bin/sh", "-c", "printf '%s\\n' " + hook_command(odd)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [
        sys.executable,
        "-S",
        str(client_path()),
        str(odd.home_dir),
    ]


def test_the_fragment_covers_every_event_and_outlasts_the_client_deadline(
    settings: Settings,
) -> None:
    fragment = hooks_settings(settings)
    assert list(fragment) == ["hooks"] and list(fragment["hooks"]) == list(HOOK_EVENTS)
    for event, groups in fragment["hooks"].items():
        (group,) = groups
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["command"] == hook_command(settings)
        assert hook["timeout"] == CLAUDE_TIMEOUT_SECONDS
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            assert group["matcher"] == "*"
        else:
            assert "matcher" not in group


def test_no_deadline_the_settings_accept_outlives_claude_codes_timeout(
    settings: Settings, project: Path
) -> None:
    """The timeout is fixed at install, the deadline rewritten by every `agentdeck up`:
    whatever it becomes, the client gives up (and applies its fallback) first."""
    install(settings, Scope.PROJECT, project)
    installed = json.loads(settings_file(project).read_text())
    timeouts = {h["timeout"] for gs in installed["hooks"].values() for g in gs for h in g["hooks"]}
    longest = Settings(home=settings.home, hook_deadline_seconds=client.MAX_DEADLINE)
    write_client_config(longest, Decision.ASK)
    deadline = json.loads(settings.hooks_config_path.read_text())["deadline"]

    assert client.read_config(str(settings.home_dir))[1] == deadline == client.MAX_DEADLINE
    assert timeouts == {CLAUDE_TIMEOUT_SECONDS}
    # Margin for the interpreter's start and the fallback's answer on a busy machine.
    assert CLAUDE_TIMEOUT_SECONDS - client.MAX_DEADLINE >= 10
    assert client.STDIN_DEADLINE < CLAUDE_TIMEOUT_SECONDS
    field = Settings.model_fields["hook_deadline_seconds"]
    bounds = {k: getattr(m, k) for m in field.metadata for k in ("gt", "le") if hasattr(m, k)}
    assert bounds == {"gt": 0, "le": client.MAX_DEADLINE}  # the settings and the client agree


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("hook_deadline_seconds", "0", "greater than 0"),
        ("hook_deadline_seconds", "-2", "greater than 0"),
        ("hook_deadline_seconds", "51", "less than or equal to 50"),
        ("hook_deadline_seconds", "nan", "finite number"),
        ("hook_deadline_seconds", "inf", "finite number"),
        ("memory_context_tokens", "-1", "greater than or equal to 0"),
        ("hook_governance", "none", "'deny-and-ask' or 'full'"),
        ("hook_governance", "Full", "'deny-and-ask' or 'full'"),
        ("hook_approval_seconds", "0", "greater than 0"),
        ("hook_approval_seconds", "46", "less than or equal to 45"),
        ("hook_approval_seconds", "nan", "finite number"),
    ],
)
def test_a_hook_deadline_or_context_budget_out_of_range_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, field: str, value: str, says: str
) -> None:
    monkeypatch.setenv(f"AGENTDECK_{field.upper()}", value)
    with pytest.raises(ValidationError) as caught:
        Settings(home=tmp_path / "home")
    [error] = caught.value.errors()
    assert error["loc"] == (field,) and says in error["msg"]


def test_a_hook_governance_agentdeck_does_not_know_stops_the_start_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Never ignored: a typo would otherwise leave the user thinking they had
    full governance."""
    monkeypatch.setenv("AGENTDECK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENTDECK_HOOK_GOVERNANCE", "ful")
    with pytest.raises(ConfigError) as caught:
        Settings.load()
    assert "AGENTDECK_HOOK_GOVERNANCE" in str(caught.value)
    assert "'deny-and-ask' or 'full'" in str(caught.value)
    monkeypatch.setenv("AGENTDECK_HOOK_GOVERNANCE", "full")
    assert Settings.load().hook_governance == "full"


def test_scope_paths(settings: Settings, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_path(Scope.PROJECT, settings, project) == project / ".claude/settings.json"
    assert settings_path(Scope.LOCAL, settings, project) == project / ".claude/settings.local.json"
    assert settings.claude_config_dir is not None
    assert settings_path(Scope.USER, settings) == settings.claude_config_dir / "settings.json"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("AGENTDECK_CLAUDE_CONFIG_DIR", raising=False)
    plain = Settings(home=settings.home)
    assert settings_path(Scope.USER, plain) == Path.home() / ".claude" / "settings.json"
    monkeypatch.chdir(project)
    assert settings_path(Scope.PROJECT, settings) == project / ".claude/settings.json"


# --- install --------------------------------------------------------------------------


def test_install_keeps_every_foreign_key_and_hook_including_one_on_the_same_event(
    settings: Settings, project: Path
) -> None:
    original = {
        "model": "opus",
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [FOREIGN_HOOK]}],
            "PermissionRequest": [{"matcher": "*", "hooks": [FOREIGN_HOOK]}],
        },
        "statusLine": {"type": "command", "command": "status.sh"},
    }
    path = write(project, json.dumps(original).encode())
    change = install(settings, Scope.PROJECT, project)
    assert change.outcome is Outcome.INSTALLED and change.path == path
    data = json.loads(path.read_text())
    assert list(data) == ["model", "permissions", "hooks", "statusLine"]
    assert {k: data[k] for k in ("model", "permissions", "statusLine")} == {
        k: original[k] for k in ("model", "permissions", "statusLine")
    }
    assert data["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [FOREIGN_HOOK]}
    assert data["hooks"]["PermissionRequest"] == original["hooks"]["PermissionRequest"]
    assert sorted(ours(data)) == sorted(HOOK_EVENTS)
    assert all(len(entries) == 1 for entries in ours(data).values())


def test_install_twice_changes_nothing_and_backs_up_once(settings: Settings, project: Path) -> None:
    original = b'{"model": "opus"}\n'
    path = write(project, original)
    first = install(settings, Scope.PROJECT, project)
    written = path.read_bytes()
    assert first.backup is not None and first.backup.read_bytes() == original
    assert first.backup.name.startswith("settings.json.agentdeck-backup-")
    second = install(settings, Scope.PROJECT, project)
    assert second.outcome is Outcome.UNCHANGED and second.backup is None
    assert path.read_bytes() == written
    assert backups(path) == [first.backup]


def test_install_creates_the_file_and_writes_the_client_config(
    settings: Settings, project: Path
) -> None:
    change = install(settings, Scope.PROJECT, project)
    path = settings_file(project)
    assert change.outcome is Outcome.INSTALLED and change.backup is None
    assert json.loads(path.read_text()) == hooks_settings(settings)
    config = json.loads(settings.hooks_config_path.read_text())
    assert change.hooks_config == settings.hooks_config_path
    assert config["socket"] == str(settings.socket_path)
    # Without a daemon, Claude Code's own permission rules and prompt decide.
    assert set(config["fallbacks"].values()) == {"pass"}


def test_under_full_governance_a_deny_by_default_profile_makes_the_client_deny_without_a_daemon(
    settings: Settings, project: Path
) -> None:
    strict = settings.model_copy(update={"profile": "strict", "hook_governance": "full"})
    install(strict, Scope.PROJECT, project)
    assert json.loads(strict.hooks_config_path.read_text())["fallbacks"]["PreToolUse"] == "deny"


def test_by_default_the_client_leaves_a_call_to_claude_code_without_a_daemon(
    settings: Settings, project: Path
) -> None:
    # deny-and-ask: the daemon gives no decision where no deny or ask rule matches,
    # so without one the client gives none either, whatever the profile's default.
    strict = settings.model_copy(update={"profile": "strict"})
    install(strict, Scope.PROJECT, project)
    assert json.loads(strict.hooks_config_path.read_text())["fallbacks"]["PreToolUse"] == "pass"


def test_install_replaces_an_older_agentdeck_entry_instead_of_adding_one(
    settings: Settings, project: Path
) -> None:
    old = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [FOREIGN_HOOK]},
                {"matcher": "*", "hooks": [{"type": "command", "command": OLD_COMMAND}]},
            ],
            "Stop": [{"hooks": [FOREIGN_HOOK, {"type": "command", "command": OLD_COMMAND}]}],
            # an event an older agentdeck listened to and this one does not
            "PostCompact": [{"hooks": [{"type": "command", "command": OLD_COMMAND}]}],
        }
    }
    path = write(project, json.dumps(old, indent=2).encode())
    install(settings, Scope.PROJECT, project)
    data = json.loads(path.read_text())
    found = ours(data)
    assert sorted(found) == sorted(HOOK_EVENTS)
    assert all(
        [h["command"] for h in entries] == [hook_command(settings)] for entries in found.values()
    )
    assert data["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [FOREIGN_HOOK]}
    assert data["hooks"]["Stop"][0]["hooks"][0] == FOREIGN_HOOK  # same group, same place
    assert "PostCompact" not in data["hooks"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b'{\n   "model":"opus",\n      "env": {"A": "1"}\n}\n', id="odd-indent"),
        pytest.param(b'{\n\t"model": "opus"\n}\n', id="tabs"),
        pytest.param(b'{"model": "opus"}', id="no-trailing-newline"),
        pytest.param('{"note": "café ☕", "esc": "caf\\u00e9"}\n'.encode(), id="unicode"),
        pytest.param(b'{\r\n  "model": "opus"\r\n}\r\n', id="crlf"),
        pytest.param(b"", id="empty-file"),
        pytest.param(
            json.dumps(
                {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [FOREIGN_HOOK]}]}},
                indent=4,
            ).encode(),
            id="existing-hooks",
        ),
    ],
)
def test_install_twice_then_uninstall_gives_back_the_same_bytes(
    settings: Settings, project: Path, raw: bytes
) -> None:
    path = write(project, raw)
    path.chmod(0o640)
    install(settings, Scope.PROJECT, project)
    assert ours(json.loads(path.read_text()))
    install(settings, Scope.PROJECT, project)
    change = uninstall(settings, Scope.PROJECT, project)
    assert change.outcome is Outcome.RESTORED
    assert path.read_bytes() == raw
    assert path.stat().st_mode & 0o777 == 0o640
    assert backups(path) == []  # copies of what is back in place are clutter
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_a_file_that_did_not_exist_is_removed_with_the_dir_install_made(
    settings: Settings, project: Path
) -> None:
    install(settings, Scope.PROJECT, project)
    install(settings, Scope.PROJECT, project)
    change = uninstall(settings, Scope.PROJECT, project)
    assert change.outcome is Outcome.DELETED
    assert list(project.iterdir()) == []


def test_a_claude_dir_that_existed_stays(settings: Settings, project: Path) -> None:
    (project / ".claude").mkdir()
    install(settings, Scope.LOCAL, project)
    assert uninstall(settings, Scope.LOCAL, project).outcome is Outcome.DELETED
    assert (project / ".claude").is_dir() and list((project / ".claude").iterdir()) == []


def test_edits_made_after_install_survive_uninstall(settings: Settings, project: Path) -> None:
    path = write(project, b'{"model": "opus"}\n')
    install(settings, Scope.PROJECT, project)
    data = json.loads(path.read_text())
    data["permissions"] = {"deny": ["Bash(rm *)"]}
    data["hooks"]["PreToolUse"].append({"matcher": "Edit", "hooks": [FOREIGN_HOOK]})
    path.write_text(json.dumps(data, indent=2))
    edited = path.read_bytes()

    change = uninstall(settings, Scope.PROJECT, project)
    assert change.outcome is Outcome.REMOVED and change.kept_edits
    assert change.backup is not None and change.backup.read_bytes() == edited
    assert json.loads(path.read_text()) == {
        "model": "opus",
        "permissions": {"deny": ["Bash(rm *)"]},
        "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [FOREIGN_HOOK]}]},
    }


def test_a_reinstall_over_edits_does_not_let_uninstall_restore_the_old_bytes(
    settings: Settings, project: Path
) -> None:
    path = write(project, b'{"model": "opus"}\n')
    install(settings, Scope.PROJECT, project)
    data = json.loads(path.read_text())
    data["env"] = {"KEEP": "me"}
    path.write_text(json.dumps(data, indent=2))
    install(settings.model_copy(update={"hook_deadline_seconds": 9.0}), Scope.PROJECT, project)
    uninstall(settings, Scope.PROJECT, project)
    assert json.loads(path.read_text()) == {"model": "opus", "env": {"KEEP": "me"}}


def test_without_the_manifest_uninstall_still_removes_exactly_our_entries(
    settings: Settings, project: Path
) -> None:
    original = {"model": "opus", "hooks": {"Stop": [{"hooks": [FOREIGN_HOOK]}]}}
    path = write(project, json.dumps(original).encode())
    install(settings, Scope.PROJECT, project)
    (settings.home_dir / "hooks-installed.json").unlink()
    change = uninstall(settings, Scope.PROJECT, project)
    assert change.outcome is Outcome.REMOVED and not change.kept_edits
    assert json.loads(path.read_text()) == original


def test_uninstall_with_nothing_installed_says_so_and_touches_nothing(
    settings: Settings, project: Path
) -> None:
    assert uninstall(settings, Scope.PROJECT, project).outcome is Outcome.NOT_INSTALLED
    assert not (project / ".claude").exists()
    path = write(project, b'{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}')
    assert uninstall(settings, Scope.PROJECT, project).outcome is Outcome.NOT_INSTALLED
    assert path.read_bytes() == b'{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}'
    assert backups(path) == []


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"model": "opus",}', "is not valid JSON"),
        (b'["a list"]', "holds a JSON list, not an object"),
        (b'{"hooks": ["PreToolUse"]}', "`hooks` is a list, not an object"),
        (b'{"hooks": {"PreToolUse": {"matcher": "*"}}}', "`hooks.PreToolUse` is a dict"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
    ],
)
def test_a_bad_settings_file_is_an_error_naming_it_and_is_left_untouched(
    settings: Settings, project: Path, raw: bytes, problem: str
) -> None:
    path = write(project, raw)
    for action in (install, uninstall):
        with pytest.raises(ConfigError) as caught:
            action(settings, Scope.PROJECT, project)
        assert str(path) in caught.value.message and problem in caught.value.message
        assert "left untouched" in (caught.value.hint or "")
        assert path.read_bytes() == raw
    assert backups(path) == [] and not settings.hooks_config_path.exists()


def test_dry_run_shows_a_diff_and_writes_nothing(settings: Settings, project: Path) -> None:
    change = install(settings, Scope.PROJECT, project, dry_run=True)
    assert change.dry_run and change.outcome is Outcome.INSTALLED
    assert change.diff.startswith("--- /dev/null\n+++ ")
    wanted = f'"command": {json.dumps(hook_command(settings))}'
    assert any(line.startswith("+") and wanted in line for line in change.diff.splitlines())
    assert not (project / ".claude").exists() and not settings.home_dir.exists()

    path = write(project, b'{"model": "opus"}')
    assert (
        '-{"model": "opus"}\n\\ No newline at end of file'
        in install(settings, Scope.PROJECT, project, dry_run=True).diff
    )
    assert path.read_bytes() == b'{"model": "opus"}' and backups(path) == []
    assert not settings.home_dir.exists()

    install(settings, Scope.PROJECT, project)
    written = path.read_bytes()
    undo = uninstall(settings, Scope.PROJECT, project, dry_run=True)
    assert undo.outcome is Outcome.RESTORED and '+{"model": "opus"}' in undo.diff
    assert path.read_bytes() == written
    assert uninstall(settings, Scope.PROJECT, project).outcome is Outcome.RESTORED


def test_an_unwritable_directory_is_a_clear_error_and_loses_nothing(
    settings: Settings, project: Path
) -> None:
    raw = b'{"model": "opus"}\n'
    path = write(project, raw)
    with unwritable(path.parent), pytest.raises(ConfigError) as caught:
        install(settings, Scope.PROJECT, project)
    assert str(path) in caught.value.message and "nothing was changed" in (caught.value.hint or "")
    assert path.read_bytes() == raw
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]


def test_install_writes_through_a_symlink_and_keeps_the_link(
    settings: Settings, project: Path, tmp_path: Path
) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_bytes(b'{"model": "opus"}\n')
    link = settings_file(project)
    link.parent.mkdir()
    link.symlink_to(real)
    install(settings, Scope.PROJECT, project)
    assert link.is_symlink() and ours(json.loads(real.read_text()))
    uninstall(settings, Scope.PROJECT, project)
    assert link.is_symlink() and real.read_bytes() == b'{"model": "opus"}\n'


def test_user_scope_goes_to_the_claude_config_dir(settings: Settings) -> None:
    assert settings.claude_config_dir is not None
    change = install(settings, Scope.USER)
    assert change.path == settings.claude_config_dir / "settings.json"
    assert ours(json.loads(change.path.read_text()))
    assert uninstall(settings, Scope.USER).outcome is Outcome.DELETED


def test_user_scope_follows_claude_codes_own_config_dir_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTDECK_CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    settings = Settings(home=tmp_path / "home")
    change = install(settings, Scope.USER)
    assert change.path == tmp_path / "cc" / "settings.json"
    assert ours(json.loads(change.path.read_text()))
    # agentdeck's own variable wins when both are set
    monkeypatch.setenv("AGENTDECK_CLAUDE_CONFIG_DIR", str(tmp_path / "mine"))
    assert settings_path(Scope.USER, Settings(home=tmp_path / "home")) == (
        tmp_path / "mine" / "settings.json"
    )


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("usual_umask")
def test_the_manifest_and_backups_holding_the_original_bytes_are_private(
    settings: Settings, project: Path
) -> None:
    original = b'{"env": {"ANTHROPIC_API_KEY": "sk-ant-not-for-others"}}\n'
    path = write(project, original)
    path.chmod(0o644)
    change = install(settings, Scope.PROJECT, project)
    manifest = settings.home_dir / MANIFEST_NAME
    assert change.backup is not None and change.backup.read_bytes() == original
    assert mode(change.backup) == 0o600
    assert b"sk-ant-not-for-others" not in manifest.read_bytes()  # base64, still a secret
    assert mode(manifest) == 0o600
    assert mode(path) == 0o644  # the settings file keeps its own mode

    manifest.chmod(0o644)  # loosened by someone: the next write tightens it again
    data = json.loads(path.read_text()) | {"model": "opus"}
    path.write_text(json.dumps(data))
    removed = uninstall(settings, Scope.PROJECT, project)  # edited since: a backup again
    assert removed.outcome is Outcome.REMOVED
    assert removed.backup is not None and mode(removed.backup) == 0o600
    assert mode(manifest) == 0o600
    assert [mode(b) for b in backups(path)] == [0o600, 0o600]
    assert not list(path.parent.glob(".*.tmp")) and not list(manifest.parent.glob(".*.tmp"))


@pytest.mark.usefixtures("usual_umask")
def test_a_settings_file_install_creates_gets_the_usual_mode(
    settings: Settings, project: Path
) -> None:
    install(settings, Scope.PROJECT, project)
    assert mode(settings_file(project)) == 0o644


# --- status ---------------------------------------------------------------------------


def test_status_per_scope(settings: Settings, project: Path) -> None:
    before = scope_status(settings, Scope.PROJECT, project)
    assert not before.installed and not before.exists and before.error is None
    install(settings, Scope.PROJECT, project)
    after = scope_status(settings, Scope.PROJECT, project)
    assert after.installed and after.current and after.events == list(HOOK_EVENTS)
    assert after.commands == [hook_command(settings)] and after.interpreter_exists is True
    assert after.timeouts == [CLAUDE_TIMEOUT_SECONDS] and after.timeout_current is True
    assert timeout_problem(after, settings.hook_deadline_seconds) is None
    assert after.to_dict()["installed"] is True
    assert not scope_status(settings, Scope.LOCAL, project).installed


def test_status_names_a_stale_command_and_an_unreadable_file(
    settings: Settings, project: Path
) -> None:
    old = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": OLD_COMMAND}]}]}}
    write(project, json.dumps(old).encode())
    stale = scope_status(settings, Scope.PROJECT, project)
    assert stale.installed and not stale.current
    assert stale.interpreter_exists is False and stale.client_exists is False
    write(project, b"{oops")
    broken = scope_status(settings, Scope.PROJECT, project)
    assert not broken.installed and broken.error and "not valid JSON" in broken.error


def test_status_names_an_installed_timeout_that_would_fail_open(
    settings: Settings, project: Path
) -> None:
    """An older install froze Claude Code's timeout at the deadline + 3 s; a longer
    deadline since would get the client killed first, and the tool run."""
    install(settings, Scope.PROJECT, project)
    path = settings_file(project)
    data = json.loads(path.read_text())
    for groups in data["hooks"].values():
        groups[0]["hooks"][0]["timeout"] = math.ceil(2.0) + 3
    path.write_text(json.dumps(data))

    old = scope_status(settings, Scope.PROJECT, project)
    assert old.installed and old.current  # the same command...
    assert old.timeouts == [5] and old.timeout_current is False  # ...but not the same timeout
    harmless = timeout_problem(old, 2.0)
    assert harmless and "5 s, not the 60 s install writes now" in harmless
    fatal = timeout_problem(old, 10.0)
    assert fatal and "not above the client's 10 s deadline" in fatal
    assert "let the tool run" in fatal and "run install again" in fatal

    install(settings, Scope.PROJECT, project)  # a reinstall puts the current timeout back
    again = scope_status(settings, Scope.PROJECT, project)
    assert again.timeouts == [CLAUDE_TIMEOUT_SECONDS] and timeout_problem(again, 10.0) is None


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~108 bytes; tmp_path can be longer.
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        yield Path(d)


def test_daemon_listening_probes_the_socket(short_dir: Path) -> None:
    path = short_dir / "d.sock"
    assert not daemon_listening(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        assert daemon_listening(path)
    assert not daemon_listening(path)  # the file is left, nobody listens
