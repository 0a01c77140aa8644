"""``agentdeck service``: the unit it writes (checked by ``systemd-analyze verify``
where systemd's tools are installed), status and uninstall, run as a user runs them;
where systemd is not the init (a container) install says the command to run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentdeck.cli.service import UNIT, systemd_runs, unit_text
from tests.support.deckcli import deck, deck_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path, HOME=str(tmp_path / "user"))


def _keys(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_install_writes_a_notify_unit_with_a_watchdog_that_systemd_accepts(
    env: dict[str, str], tmp_path: Path
) -> None:
    where = tmp_path / "units"
    done = deck(env, "service", "install", "--unit-dir", str(where))
    assert done.code == 0, done.err
    unit = where / UNIT
    assert f"wrote {unit}" in done.out
    assert "warning" not in done.out  # systemd-analyze (where installed) objects to nothing
    keys = _keys(unit.read_text())
    assert keys["Type"] == "notify" and keys["Restart"] == "on-failure"
    assert int(keys["WatchdogSec"]) > 0 and keys["KillMode"] == "mixed"
    assert keys["ExecStart"] == f'"{sys.executable}" -m agentdeck up'
    assert keys["Environment"] == f'"AGENTDECK_HOME={env["AGENTDECK_HOME"]}"'
    assert keys["WantedBy"] == "multi-user.target"
    token_file = Path(env["AGENTDECK_HOME"]) / "token"
    assert not token_file.exists() or token_file.read_text().strip() not in unit.read_text()
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed: the unit's syntax is not verified")
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert verified.returncode == 0, verified.stderr
    assert UNIT not in verified.stderr, verified.stderr  # no warning names our unit

    status = deck(env, "service", "status", "--unit-dir", str(where), "--json")
    assert status.code == 0 and status.json()["installed"] and status.json()["current"]
    removed = deck(env, "service", "uninstall", "--unit-dir", str(where))
    assert removed.code == 0 and not unit.exists()
    assert deck(env, "service", "status", "--unit-dir", str(where)).code == 1


def test_a_user_unit_where_systemd_does_not_run_says_the_command(
    env: dict[str, str], tmp_path: Path
) -> None:
    if systemd_runs():
        pytest.skip("systemd runs here: install would enable the unit for real")
    done = deck(env, "service", "install", "--user")
    assert done.code == 0, done.err
    unit = tmp_path / "user" / ".config" / "systemd" / "user" / UNIT
    assert unit.is_file() and _keys(unit.read_text())["WantedBy"] == "default.target"
    assert "systemctl --user daemon-reload && systemctl --user enable --now" in done.out
    status = deck(env, "service", "status", "--user")
    assert status.code == 0 and "current" in status.out and "state is unknown" in status.out
    assert deck(env, "service", "uninstall", "--user").code == 0
    assert not unit.exists()


def test_a_path_that_cannot_be_one_word_of_a_unit_is_refused_and_percent_is_escaped() -> None:
    text = unit_text(Path("/srv/100%/home"), user=False, python='/opt/a "b"/python')
    keys = _keys(text)
    assert keys["Environment"] == '"AGENTDECK_HOME=/srv/100%%/home"'
    assert keys["ExecStart"] == '"/opt/a \\"b\\"/python" -m agentdeck up'
    from agentdeck.errors import UsageError

    with pytest.raises(UsageError, match="line break"):
        unit_text(Path("/srv/a\nExecStartPre=/bin/evil"), user=False)
