"""``policy replay`` given a project no agent worked in (a typo): said, never a silent zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_policy_replay_cli import recorded
from tests.support.deckcli import deck, deck_env

pytestmark = pytest.mark.cli


def test_a_project_no_agent_worked_in_is_said(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    recorded(tmp_path, env)
    typo = tmp_path / "nowhere"
    done = deck(env, "policy", "replay", "--profile", "strict", "--project", str(typo))
    assert done.code == 0, done.err
    assert done.out.splitlines()[1].startswith("0 tool calls")
    assert f"note: no agent worked in {typo} (or under it): `agentdeck ls --json`" in done.out
    week = deck(env, "policy", "replay", "--profile", "strict", "--project", str(typo),
                "--since", "7d", "--json")  # fmt: skip
    assert any("(or under it) in this period" in n for n in week.json()["notes"])
    (agent,) = deck(env, "ls", "--json").json()
    found = deck(env, "policy", "replay", "--profile", "strict", "--project", agent["cwd"])
    assert found.code == 0 and "no agent worked in" not in found.out
    assert found.out.splitlines()[1].startswith("2 tool calls")
