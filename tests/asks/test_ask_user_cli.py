"""Claude Code's AskUserQuestion from a terminal: `agentdeck run` on the real CLI
and the scripted model waits on ONE ask in the inbox (no approval), another
terminal answers it with `agentdeck answer`, and the model's next request
carries the chosen option (the scenario only says CHOSE-… if it does)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.deckcli import deck, deck_env, spawn
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

SCENARIOS = Path(__file__).parent / "scenarios"
ONE = str(SCENARIOS / "ask-user.yaml")
TWO = str(SCENARIOS / "ask-user-two.yaml")


async def _pending(env: dict[str, str]) -> dict[str, Any]:
    async def listed() -> list[dict[str, Any]]:
        done = deck(env, "asks", "--json")
        return json.loads(done.out) if done.code == 0 else []

    (ask,) = await eventually(listed, timeout=90, what="the question in the inbox")
    return ask


def _finish(run: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = run.communicate(timeout=90)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    agent: dict[str, Any] = json.loads(out)["agent"]
    return agent


async def test_a_question_is_one_ask_answered_by_number(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    run = spawn(env, "run", "--scenario", ONE, "start", "--json")
    try:
        ask = await _pending(env)
        # One ask, with its options kept on it; no approval request at all.
        assert deck(env, "approvals", "--json").json() == []
        assert ask["to_agent_id"] is None
        (question,) = ask["questions"]
        assert question["question"] == "Which database should the service use?"
        assert question["header"] == "Database"
        assert question["multiSelect"] is False
        assert [o["label"] for o in question["options"]] == ["PostgreSQL", "SQLite"]
        assert question["options"][1]["description"] == "a file, for one writer"
        assert "1) PostgreSQL" in ask["text"] and "[agentdeck:choices" not in ask["text"]
        shown = deck(env, "asks")
        assert "PostgreSQL" in shown.out, shown.out

        # Bad answers are usage errors, and leave the question open.
        for bad, said in [("3", "no option 3"), ("", "needs text"), ("1,2", "takes one")]:
            done = deck(env, "answer", ask["id"], bad)
            assert done.code == 2, (bad, done.err)
            assert said in done.err and "Traceback" not in done.err
        assert deck(env, "asks", "--json").json()[0]["state"] == "pending"

        done = deck(env, "answer", ask["id"], "2", "--json")
        assert done.code == 0, done.err
        assert done.json()["answer"] == "SQLite"
        agent = _finish(run)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert agent["extra"]["last_result"] == "CHOSE-SQLITE"
    answered = deck(env, "asks", "--all", "--json").json()
    assert [(a["state"], a["answered_by"]) for a in answered] == [("answered", "user:cli")]
    # Audited like any answer: the call's decisions, the last one by the person.
    audit = deck(env, "audit", "ls", "--json", "--limit", "10")
    assert audit.code == 0, audit.err
    rows = [r for r in audit.json() if r["tool"] == "AskUserQuestion"]
    assert [(r["decision"], r["answered_by"]) for r in rows] == [
        ("ask", "policy"),
        ("allow", "user:cli"),
    ], rows
    assert deck(env, "audit", "verify").code == 0


async def test_two_questions_answered_at_once_by_label_and_numbers(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    run = spawn(env, "run", "--scenario", TWO, "start", "--profile", "strict", "--json")
    try:
        ask = await _pending(env)
        assert [q["multiSelect"] for q in ask["questions"]] == [False, True]
        for bad, said in [
            ("SQLite", "answer each as 1="),
            ("1=SQLite", "question 2 has no answer"),
            ("1=SQLite;2=1,4", "no option 4"),
            ("1=SQLite;3=Auth", "no question 3"),
        ]:
            done = deck(env, "answer", ask["id"], bad)
            assert done.code == 2 and said in done.err, (bad, done.err)
        done = deck(env, "answer", ask["id"], "1=sqlite;2=1,Search", "--json")
        assert done.code == 0, done.err
        assert done.json()["answer"] == "1=SQLite\n2=Auth, Search"
        agent = _finish(run)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    # Under `strict` (deny by default) the question was still put, not refused.
    assert agent["extra"]["last_result"] == "CHOSE-SQLITE-AUTH-SEARCH"


async def test_a_profile_that_denies_it_by_name_refuses_it(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    profile = tmp_path / "no-questions.yaml"
    profile.write_text(
        yaml.safe_dump({"name": "noq", "default": "allow", "deny": ["AskUserQuestion"]})
    )
    run = spawn(env, "run", "--scenario", ONE, "start", "--profile", str(profile), "--json")
    agent = _finish(run)
    assert agent["extra"]["last_result"] == "NO-CHOICE"
    assert deck(env, "asks", "--all", "--json").json() == []
    assert deck(env, "approvals", "--all", "--json").json() == []
