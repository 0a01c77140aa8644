"""A token glued after other text (``x_ghp_…``, ``prefix-sk-ant-…``, ``abcAKIA…``)
reaches no table: the scrubber used to look for tokens only where a run of token
characters starts, so an agent (or a careless tool) could log a secret by gluing it
to a prefix.

One daemon, the real Claude Code CLI on the scripted model: a Bash ``cat`` of a file
of glued tokens (the tool's output), a Read of a file whose path holds one (the
tool's input), and the model's own text carrying them. Then every table (``SELECT *``
from each table ``sqlite_master`` lists, JSON taken apart) and the database's bytes:
none of the tokens, in any form. Identifiers that merely hold a prefix arrive
unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentdeck.core.agent import AgentState
from agentdeck.core.events import EventType
from agentdeck.settings import Settings
from tests.security.test_secrets_everywhere import _tables
from tests.support.served import serving
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

FINISH_SECONDS = 180.0
GITHUB = "ghp_R7kLmZpQ9rTnW2vXhJ8sUeGc4dYfK0aRtB3x"
TOKENS = [
    GITHUB,
    "sk-ant-api03-Vq7LmZpR2vTnW9kYhJ3sUe_k2-Lq8WcVb4NmZ0aAA",
    "AKIAZ7QW3RTY5UIO2PLK",
    "npm_Pk9xWqLmR2pT7vNhYs4JbQw8PzLrTn3kHmYv",
    "xoxb-2234567890123-2234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudGRlY2sifQ.Qm9wN3JyP4J3jVmNHl0w5N_XgL0n",
]
GLUED = "\n".join(
    [
        f"deploy_{TOKENS[0]}",
        f"prefix-{TOKENS[1]}",
        f"id=abc{TOKENS[2]}",
        f'{{"value": "x_{TOKENS[3]}"}}',
        f"https://api.example.com/v1?a=1&k=k_{TOKENS[4]}",
        f"cookie_{TOKENS[5]}",
    ]
)
STAYS = [
    "my_ghp_helper = 1",
    "flask-SQLAlchemy-3-1-1-py3-none-any.whl",
    "commit_3f786850e387550fdab836ed7e6dc881de23001b",
]


def _forms(token: str) -> list[str]:
    return [token, json.dumps(token)[1:-1], token[: len(token) // 2 + 8]]


def _scenario(root: Path) -> Path:
    cat = {"name": "Bash", "input": {"command": "cat glued.txt", "description": "Show it"}}
    read = {"name": "Read", "input": {"file_path": f"notes/x_{GITHUB}.txt"}}
    files = {"glued.txt": GLUED + "\n" + "\n".join(STAYS) + "\n", f"notes/x_{GITHUB}.txt": "hi"}
    scenario = {
        "name": "glued",
        "workspace": {"files": files},
        "turns": [
            {"reply": [{"text": "Let me look."}, {"tool_use": cat}]},
            {"reply": [{"tool_use": read}]},
            {"reply": [{"text": "Found:\n" + GLUED}]},
        ],
    }
    path = root / "glued.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True, width=10_000))
    return path


async def test_a_glued_token_reaches_no_table(settings: Settings, tmp_path: Path) -> None:
    async with serving(settings) as served, served.api() as api:
        created = await api.post(
            "/api/agents",
            json={
                "prompt": "show me the notes",
                "scenario": str(_scenario(tmp_path)),
                "allow": ["Bash(cat:*)", "Read"],
            },
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["id"]

        async def finished() -> dict[str, Any] | None:
            found: dict[str, Any] = (await api.get(f"/api/agents/{agent_id}")).json()
            return found if not AgentState(found["state"]).is_busy and found["turns"] else None

        agent = await eventually(finished, timeout=FINISH_SECONDS, what="the agent to finish")
        assert agent["state"] == AgentState.IDLE, agent
        events = (await api.get("/api/events", params={"agent": agent_id})).json()["events"]

    # The paths were taken: the output, the Read's input, the model's text; redacted.
    outputs = [e["data"]["output"] for e in events if e["type"] == EventType.TOOL_RETURNED]
    texts = [e["data"]["text"] for e in events if e["type"] == EventType.ASSISTANT_TEXT]
    calls = [e["data"] for e in events if e["type"] == EventType.TOOL_CALLED]
    assert len(outputs) == 2 and any(t.startswith("Found:") for t in texts), events
    assert outputs[0].count("[REDACTED:") == len(TOKENS), outputs[0]
    assert "deploy_[REDACTED:github-token]" in outputs[0]
    assert "[REDACTED:github-token]" in json.dumps(calls)
    for line in STAYS:  # no false positive on the way
        assert line in outputs[0], line

    tables = _tables(settings.db_path)
    assert tables["events"], tables.keys()
    found = {
        table: [t for t in TOKENS if any(f in text for text in texts for f in _forms(t))]
        for table, texts in tables.items()
    }
    assert {table: hits for table, hits in found.items() if hits} == {}
    for suffix in ("", "-wal"):
        path = settings.db_path.with_name(settings.db_path.name + suffix)
        if path.exists():
            raw = path.read_bytes().decode("utf-8", "replace")
            assert [t for t in TOKENS if any(f in raw for f in _forms(t))] == [], path.name
