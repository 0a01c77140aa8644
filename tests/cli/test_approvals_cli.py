"""The approval inbox from a terminal: `agentdeck run` waits, another terminal answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.deckcli import deck, deck_env, spawn
from tests.support.governance import ask_profile_and_scenario
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


@pytest.mark.parametrize("answer", ["approve", "deny"])
async def test_run_waits_for_an_answer_from_another_terminal(tmp_path: Path, answer: str) -> None:
    env = deck_env(tmp_path)
    profile, scenario = ask_profile_and_scenario(tmp_path)
    run = spawn(env, "run", "--scenario", scenario, "--profile", profile, "make it", "--json")
    try:

        async def pending() -> list[dict[str, object]]:
            listed = deck(env, "approvals", "--json")
            return json.loads(listed.out) if listed.code == 0 else []

        (approval,) = await eventually(pending, timeout=60, what="a pending approval")
        extra = ["--always"] if answer == "approve" else ["--reason", "not today"]
        done = deck(env, answer, str(approval["id"]), *extra, "--json")
        assert done.code == 0, done.err
        assert done.json()["state"] == ("allowed" if answer == "approve" else "denied")
        # The run waiting for it has the answer: nothing is kept to tell its agent
        # "while you were stopped" when it is next resumed.
        shown = deck(env, "show", str(approval["agent_id"]), "--json")
        assert "reports" not in shown.json()["extra"]
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    agent = json.loads(out)["agent"]
    cwd = Path(agent["cwd"])
    assert (cwd / "made.txt").exists() is (answer == "approve")
    assert "reports" not in deck(env, "show", agent["id"], "--json").json()["extra"]
    assert "approval needed" not in err
    again = deck(env, "approve", str(approval["id"]))
    assert again.code == 1 and "cannot answer it again" in again.err
    assert f"approval request {approval['id']} is " in again.err, again.err
    assert deck(env, "approvals").out.strip() == "no approval requests waiting"


def test_unknown_approval_is_one_clear_line(tmp_path: Path) -> None:
    done = deck(deck_env(tmp_path), "approve", "apnope")
    assert done.code == 1 and "no approval request" in done.err
    assert "Traceback" not in done.err
