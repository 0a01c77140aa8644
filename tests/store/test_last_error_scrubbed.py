"""An agent's last error is scrubbed where its row is built, whoever wrote it:
through ``save_agent`` and through ``record`` (the runner's one commit), the row
read raw, the store's reads and ``agentdeck show --json`` hold no secret of the
redaction corpus."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentdeck.core.agent import AgentState
from agentdeck.core.events import ErrorOccurred
from agentdeck.store import Store
from tests.runner.test_scrubbing import SECRETS_TXT, leaked
from tests.support.deckcli import deck, deck_env

from .conftest import db_rows, make_agent

pytestmark = pytest.mark.anyio


@pytest.mark.sqlite_only("`show` runs the CLI, which reads the home's SQLite file")
async def test_a_last_error_is_kept_scrubbed_whoever_writes_it(
    store: Store, tmp_path: Path
) -> None:
    saved = make_agent("a0kz3m1x9q4wfc2", state=AgentState.ERROR, last_error=SECRETS_TXT)
    await store.save_agent(saved)
    recorded = make_agent("a0kz3m1x9q4wfc3", state=AgentState.ERROR)
    failed = ErrorOccurred(agent_id=recorded.id, ts=1.0, kind="spawn", message="it failed")
    await store.record([failed], recorded.with_changes(last_error=f"stream failed: {SECRETS_TXT}"))

    rows = db_rows(store, "SELECT last_error FROM agents ORDER BY id")
    assert len(rows) == 2 and all("[REDACTED:" in r[0] for r in rows), rows
    assert leaked(json.dumps(rows)) == []
    for agent in await store.list_agents():
        assert agent.last_error and leaked(agent.last_error) == []
    shown = await asyncio.to_thread(deck, deck_env(tmp_path), "show", saved.id, "--json")
    assert shown.code == 0, shown.err
    assert "[REDACTED:" in shown.out and leaked(shown.out) == []
