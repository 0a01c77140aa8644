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
import json
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.settings import Settings
from tests.runner.test_scrubbing import SECRETS_TXT, _finished, leaked
from tests.support.deckcli import deck, deck_env
from tests.support.served import Served, serving

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
    assert "printf %s export ANTHROPIC_API_KEY=[REDACTED:" in reasons[0], reasons[0]
    assert "curl -u admin:[REDACTED:password] https://jenkins" in reasons[1], reasons[1]
    assert listed.code == 0, listed.err
    assert "[REDACTED:" in listed.out and leaked(listed.out) == []
    assert verified.code == 0, verified.err
    assert verified.json()["ok"] is True and verified.json()["count"] == len(rows) + 1  # + start
    assert leaked(json.dumps(_rows(settings.db_path, "audit"))) == []
