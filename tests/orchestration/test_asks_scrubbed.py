"""Secrets out of the asks table: a worker's question and a person's answer.

A worker asks with the ask tool, on the real Claude Code CLI against the scripted
model, a question carrying the whole redaction corpus; a person answers from the
CLI with secrets of the corpus. Then the rows read raw (SQL), the database's
bytes, what the API, ``asks --all --json`` and the /asks page serve, and what
the worker was told: no secret of the corpus.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.core.events import EventType
from agentdeck.settings import Settings
from tests.governance.test_secret_tables import MESSAGE, _rows, served_text
from tests.runner.test_scrubbing import SECRETS_TXT, _database_texts, _finished, leaked
from tests.support.deckcli import deck, deck_env
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]


async def test_a_question_and_its_answer_are_kept_and_served_scrubbed(
    settings: Settings, tmp_path: Path
) -> None:
    ask = {"name": "mcp__deck__ask_orchestrator", "input": {"question": SECRETS_TXT}}
    scenario = tmp_path / "ask.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {"name": "ask", "turns": [{"reply": [{"tool_use": ask}]}, {"reply": [{"text": "Ok"}]}]},
            allow_unicode=True,
            width=10**5,
        )
    )
    env = deck_env(tmp_path)
    async with serving(settings) as served:
        async with served.api() as api:
            body = {"prompt": "ask", "scenario": str(scenario)}
            created = await api.post("/api/agents", json=body)
        assert created.status_code == 201, created.text
        worker_id = created.json()["id"]

        async def asked() -> dict[str, Any] | None:
            async with served.api() as api:
                found = (await api.get("/api/asks")).json()["asks"]
            return found[0] if found else None

        question = await eventually(asked, timeout=60, what="the question")
        assert question["text"].startswith("export ANTHROPIC_API_KEY=[REDACTED:anthropic-key]")
        shown = await served_text(served, env, "asks", "answered")
        assert "[REDACTED:" in shown and leaked(shown) == []
        done = await asyncio.to_thread(deck, env, "answer", question["id"], MESSAGE, "--json")
        assert done.code == 0, done.err
        assert done.json()["answer"] == (
            "ok; GITHUB_TOKEN=[REDACTED:github-token] and [REDACTED:aws-key]"
        ), done.out

        agent = await _finished(served, worker_id)
        assert agent["state"] == AgentState.IDLE, agent
        shown = await served_text(served, env, "asks", "answered")
        assert leaked(shown) == []
        async with served.api() as api:
            events = (await api.get("/api/events", params={"agent": worker_id})).json()["events"]
    told = [e["data"]["output"] for e in events if e["type"] == EventType.TOOL_RETURNED]
    assert any("[REDACTED:github-token]" in t for t in told), told

    rows = _rows(settings.db_path, "asks")
    assert [r["state"] for r in rows] == ["answered"], rows
    assert leaked(json.dumps(rows)) == []
    assert leaked("\n".join(_database_texts(settings.db_path))) == []
