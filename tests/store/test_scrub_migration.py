"""Migration 0009: what an older version wrote raw (an agent's prompt as typed,
a steering command's payload) is scrubbed in place, and its bytes leave the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from agentdeck.core.agent import PROMPT_REDACTED
from agentdeck.daemon.compose import build_runner
from agentdeck.errors import SecretNotKept
from agentdeck.settings import Settings
from agentdeck.store import Store, dialect, migrate
from tests.conftest import make_settings

from .conftest import sqlite_rows

pytestmark = pytest.mark.anyio

KEY = "ghp_" + "Mq2Lw6Zc0Vn5Rk9Pj3Sd7Gf1Ya2UeHx4Tb8"


def _at_0008(path: Path) -> None:
    """A database an older version wrote: raw prompts and payloads."""
    engine = dialect.create_engine(path, writer=True)
    insert_agent = sa.text(
        "INSERT INTO agents (id, name, state, source, spec, cwd, cost_usd, input_tokens, "
        "output_tokens, turns, extra, created_at, updated_at, owner) "
        "VALUES (:id, 'n', 'interrupted', 'agentdeck', :spec, '/w', 0, 0, 0, 0, '{}', 1, 1, "
        "'admin')"
    )
    insert_command = sa.text(
        "INSERT INTO commands (agent_id, kind, payload, created_at, claimed_at, claimed_by) "
        "VALUES ('a1', 'send', :payload, 1, :claimed_at, :claimed_by)"
    )
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0008")
            for agent_id, prompt in (("a1", f"deploy with {KEY}"), ("a2", "plain words")):
                conn.execute(insert_agent, {"id": agent_id, "spec": json.dumps({"prompt": prompt})})
            for text, claimed in (
                (f"token {KEY}", 2.0),
                (f"GITHUB_TOKEN={KEY}", None),
                ("hi", None),
            ):
                conn.execute(
                    insert_command,
                    {
                        "payload": json.dumps({"text": text}),
                        "claimed_at": claimed,
                        "claimed_by": "pid:1" if claimed else None,
                    },
                )
    finally:
        engine.dispose()


async def test_0009_scrubs_prompts_and_payloads_an_older_version_wrote(tmp_path: Path) -> None:
    settings: Settings = make_settings(tmp_path)
    settings.ensure_home()
    path = settings.db_path
    _at_0008(path)
    assert KEY.encode() in b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))

    store = Store.open(path)
    runner = build_runner(store, settings)
    try:
        one, two = await store.get_agent("a1"), await store.get_agent("a2")
        assert one.spec.prompt == "deploy with [REDACTED:github-token]"
        assert one.extra[PROMPT_REDACTED] is True
        assert two.spec.prompt == "plain words" and PROMPT_REDACTED not in two.extra
        # The raw prompt is gone: a relaunch says so rather than send the copy.
        with pytest.raises(SecretNotKept):
            await runner.relaunch("a1")
        commands = await store.list_commands("a1")
        assert [(c.payload["text"], c.claimed_by) for c in commands] == [
            ("token [REDACTED:github-token]", "pid:1"),
            ("GITHUB_TOKEN=[REDACTED:github-token]", "refused:held-a-secret"),
            ("hi", None),
        ]
        # Only the plain one is left to deliver.
        assert [c.payload for c in await store.claim_commands(["a1"], "pid:2")] == [{"text": "hi"}]
    finally:
        await runner.shutdown()
        await store.close()
    assert sqlite_rows(path, "SELECT version_num FROM alembic_version") == [(migrate.HEAD,)]
    held = [p.name for p in path.parent.glob(path.name + "*") if KEY.encode() in p.read_bytes()]
    assert held == []
