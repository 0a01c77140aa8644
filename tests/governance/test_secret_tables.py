"""Secrets out of the governance tables: the audit log and the approval inbox.

The redaction corpus goes through the real Claude Code CLI on the scripted model
as the commands an agent wants to run; a strict profile denies them (their
reasons name the command) or the default one asks (the person deciding sees the
call). Then the tables' rows read raw (SQL), the database's bytes, what the API,
the CLI and the pages serve: no secret of the corpus; the audit chain still
verifies; an approved call ran with its real input.
"""

from __future__ import annotations

import asyncio
import html
import json
import shlex
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.settings import Settings
from tests.runner.test_scrubbing import SECRETS_TXT, _database_texts, _finished, leaked
from tests.support.deckcli import deck, deck_env
from tests.support.served import Served, serving
from tests.support.waiting import eventually
from tests.web.dashboard_support import logged_in

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

CURL_PASSWORD = "Vq%1mMby!rbeDR"  # the corpus's `curl -u admin:…` case
CURL = f"echo curl -u admin:{CURL_PASSWORD} https://jenkins.example.com/api/json"
# What the approver says, with secrets of the corpus in it.
MESSAGE = "ok; GITHUB_TOKEN=ghp_G5HlLB43jU38rDiU2I2MJeWeZsKYzX7sMjqd and AKIA3BA4GWFC3V7J755B"


def _scenario(root: Path, *commands: str) -> str:
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": c}}}]} for c in commands
    ]
    turns.append({"reply": [{"text": "Done."}]})
    path = root / "secret-commands.yaml"
    path.write_text(
        yaml.safe_dump({"name": "secret-commands", "turns": turns}, allow_unicode=True, width=10**5)
    )
    return str(path)


def _rows(db: Path, table: str) -> list[dict[str, Any]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(f'SELECT * FROM "{table}"')]


async def _create(served: Served, body: dict[str, Any]) -> str:
    async with served.api() as api:
        created = await api.post("/api/agents", json=body)
    assert created.status_code == 201, created.text
    agent_id: str = created.json()["id"]
    return agent_id


async def test_denied_commands_reach_the_audit_log_scrubbed_and_the_chain_verifies(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = "printf %s " + shlex.quote(SECRETS_TXT)
    scenario = _scenario(tmp_path, corpus, CURL)
    async with serving(settings) as served:
        agent_id = await _create(
            served, {"prompt": "deploy", "scenario": scenario, "profile": "strict"}
        )
        agent = await _finished(served, agent_id)
        assert agent["state"] == AgentState.IDLE, agent
        env = deck_env(tmp_path)
        listed = await asyncio.to_thread(deck, env, "audit", "ls", "--json")
        verified = await asyncio.to_thread(deck, env, "audit", "verify", "--json")

    rows = [r for r in _rows(settings.db_path, "audit") if r["tool"] == "Bash"]
    assert [r["decision"] for r in rows] == ["deny", "deny"], rows
    reasons = [r["reason"] for r in rows]
    # the command shell-quoted, as it would be typed: a quoted secret stays one word
    assert "printf %s 'export ANTHROPIC_API_KEY=[REDACTED:" in reasons[0], reasons[0]
    assert "curl -u 'admin:[REDACTED:password]' https://jenkins" in reasons[1], reasons[1]
    assert listed.code == 0, listed.err
    assert "[REDACTED:" in listed.out and leaked(listed.out) == []
    assert verified.code == 0, verified.err
    assert verified.json()["ok"] is True and verified.json()["count"] == len(rows) + 1  # + start
    assert leaked(json.dumps(_rows(settings.db_path, "audit"))) == []


async def _pending(served: Served) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        async with served.api() as api:
            found = (await api.get("/api/approvals")).json()["approvals"]
        return found[0] if found else None

    return await eventually(probe, timeout=60, what="a pending approval request")


async def served_text(
    served: Served, env: dict[str, str], kind: str = "approvals", ended: str = "allowed"
) -> str:
    """What a viewer is served of an inbox (``approvals`` or ``asks``): the API
    (pending and ``ended`` entries), the CLI, the page."""
    async with served.api() as api:
        listed = (await api.get(f"/api/{kind}", params={"state": ["pending", ended]})).text
    cli = await asyncio.to_thread(deck, env, kind, "--all", "--json")
    assert cli.code == 0, cli.err
    async with logged_in(SimpleNamespace(url=served.info.url, token=served.token)) as web:
        page = html.unescape((await web.get(f"/{kind}")).text)
    return "\n".join([listed, cli.out, page])


async def test_the_approval_inbox_shows_calls_scrubbed_and_the_approved_calls_run_as_asked(
    settings: Settings, tmp_path: Path
) -> None:
    """``curl -u admin:<password> …`` waits for a decision: the person deciding
    sees ``curl -u admin:[REDACTED:password] …``; the call that runs is the real
    one. So does a heredoc carrying the whole corpus; the approver's message too.
    A call shown redacted is answered once, never remembered."""
    heredoc = f"cat > notes.txt <<'EOF'\n{SECRETS_TXT}EOF"
    scenario = _scenario(tmp_path, f"{CURL} > made.txt", heredoc, CURL.removeprefix("echo "))
    env = deck_env(tmp_path)
    async with serving(settings) as served:
        agent_id = await _create(
            served, {"prompt": "deploy", "scenario": scenario, "profile": "default"}
        )
        first = await _pending(served)
        assert first["input"]["command"] == (
            "echo curl -u admin:[REDACTED:password] https://jenkins.example.com/api/json > made.txt"
        )
        shown = await served_text(served, env)
        assert "curl -u admin:[REDACTED:password] https://jenkins" in shown
        assert leaked(shown) == []
        done = await asyncio.to_thread(deck, env, "approve", first["id"], "--message", MESSAGE)
        assert done.code == 0, done.err

        second = await _pending(served)
        assert second["id"] != first["id"]
        assert "[REDACTED:" in second["input"]["command"]
        shown = await served_text(served, env)
        assert leaked(shown) == []
        async with served.api() as api:
            answered = await api.post(
                f"/api/approvals/{second['id']}", json={"decision": "allow", "message": MESSAGE}
            )
        assert answered.status_code == 200, answered.text
        assert answered.json()["message"] == (
            "ok; GITHUB_TOKEN=[REDACTED:github-token] and [REDACTED:aws-key]"
        ), answered.json()

        # Denied for good: no rule can be remembered of a call shown redacted (it
        # would never match the real call, or keep the secret on disk).
        third = await _pending(served)
        assert third["input"]["command"] == CURL.removeprefix("echo ").replace(
            CURL_PASSWORD, "[REDACTED:password]"
        )
        done = await asyncio.to_thread(
            deck, env, "deny", third["id"], "--always", "--reason", MESSAGE, "--json"
        )
        assert done.code == 0, done.err
        assert "answered once: no rule can remember it" in done.json()["message"], done.out

        agent = await _finished(served, agent_id)
        assert agent["state"] == AgentState.IDLE, agent
        shown = await served_text(served, env)
        assert leaked(shown) == []

    # The calls that ran were the real ones.
    cwd = Path(agent["cwd"])
    assert (cwd / "made.txt").read_text() == (
        f"curl -u admin:{CURL_PASSWORD} https://jenkins.example.com/api/json\n"
    )
    assert (cwd / "notes.txt").read_text() == SECRETS_TXT
    rows = _rows(settings.db_path, "approvals")
    assert sorted(r["state"] for r in rows) == ["allowed", "allowed", "denied"], rows
    assert _rows(settings.db_path, "grants") == []
    assert all("[REDACTED:" in r["message"] for r in rows), rows
    assert leaked(json.dumps(rows)) == []
    assert leaked(json.dumps(_rows(settings.db_path, "audit"))) == []
    assert leaked("\n".join(_database_texts(settings.db_path))) == []
