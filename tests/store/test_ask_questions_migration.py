"""Migration 0010: a multiple choice's questions move out of the ask's text (where
the version before kept them behind a trailer) into ``asks.questions``, on both
backends; a plain question, or a text whose trailer is not JSON, stays as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command

from agentdeck.store import Store, dialect, migrate
from agentdeck.store.asks import AskStore

pytestmark = pytest.mark.anyio

QUESTIONS = [
    {
        "question": "Which database?",
        "header": "Database",
        "options": [{"label": "PostgreSQL", "description": ""}, {"label": "SQLite"}],
        "multiSelect": False,
    }
]
OLD_TRAILER = "[agentdeck:choices v1] "
READABLE = "Which database?\n  1. PostgreSQL\n  2. SQLite"


def _at_0009(target: Path | str) -> None:
    if isinstance(target, Path):
        target.parent.mkdir(parents=True, exist_ok=True)
    engine = dialect.create_engine(target, writer=True)
    insert = sa.text(
        "INSERT INTO asks (id, kind, agent_id, to_agent_id, text, state, created_at, "
        "expires_at) VALUES (:id, 'question', 'a1', NULL, :text, 'pending', :at, 9e9)"
    )
    try:
        with engine.begin() as conn:
            command.upgrade(migrate.alembic_config(conn), "0009")
            for n, (ask_id, text) in enumerate(
                (
                    ("k-choice", f"{READABLE}\n\n{OLD_TRAILER}{json.dumps(QUESTIONS)}"),
                    ("k-plain", "a plain question"),
                    ("k-broken", f"q\n\n{OLD_TRAILER}[{{not json"),
                )
            ):
                conn.execute(insert, {"id": ask_id, "text": text, "at": float(n)})
    finally:
        engine.dispose()


async def test_questions_move_into_their_column(target: Path | str) -> None:
    _at_0009(target)
    async with Store.open(target) as store:
        asks = {a.id: a for a in await AskStore(store).list_asks(limit=10)}
    choice = asks["k-choice"]
    assert choice.text == READABLE
    assert [q.question for q in choice.questions] == ["Which database?"]
    assert [o.label for o in choice.questions[0].options] == ["PostgreSQL", "SQLite"]
    assert (asks["k-plain"].text, asks["k-plain"].questions) == ("a plain question", ())
    assert asks["k-broken"].questions == () and asks["k-broken"].text.startswith("q\n\n")
