"""A message holding a secret is never written to the steering queue.

A message to an agent another process runs (an ``agentdeck run`` in another
terminal, no daemon) goes through the ``commands`` table. One holding a key is
refused with a clear error (where to send it instead), nothing is queued and the
database file and its WAL hold no trace of it; a plain message still goes
through. The store refuses such a payload whoever asks.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agentdeck.errors import SecretNotKept
from agentdeck.store.store import Store
from tests.cli.test_steering import LONG, finish, tool_running
from tests.support.deckcli import deck, deck_env, spawn
from tests.support.waiting import eventually

pytestmark = [pytest.mark.anyio, pytest.mark.cli]

KEY = "ghp_" + "Hx4Tb8Mq2Lw6Zc0Vn5Rk9Pj3Sd7Gf1Ya2Ue"
SECRET_TEXT = f"here is the token: GITHUB_TOKEN={KEY}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return deck_env(tmp_path)


@pytest.fixture
async def store(env: dict[str, str]) -> AsyncIterator[Store]:
    home = Path(env["AGENTDECK_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    async with Store.open(home / "agentdeck.db") as s:
        yield s


@pytest.fixture
def run(env: dict[str, str]) -> Iterator[object]:
    proc = spawn(env, *LONG)
    yield proc
    finish(proc, timeout=10)


def _bytes_hold_key(home: Path) -> list[str]:
    files = [home / f"agentdeck.db{suffix}" for suffix in ("", "-wal", "-shm")]
    return [f.name for f in files if f.exists() and KEY.encode() in f.read_bytes()]


async def test_a_secret_to_an_agent_another_process_runs_is_refused_and_not_queued(
    env: dict[str, str], store: Store, run: object
) -> None:
    agent = await tool_running(store)
    refused = deck(env, "send", agent.id, SECRET_TEXT, "--no-wait")
    assert refused.code != 0
    assert "holds a secret" in refused.err and "where the agent runs" in refused.err
    assert KEY not in refused.out + refused.err
    assert await store.list_commands(agent.id) == []
    with contextlib.closing(sqlite3.connect(store.db_path)) as db:
        assert [r for r in db.execute("SELECT * FROM commands") if KEY in str(r)] == []
    assert _bytes_hold_key(Path(env["AGENTDECK_HOME"])) == []

    # A plain message still goes through the queue, taken by the run's process.
    sent = deck(env, "send", agent.id, "plain words, carry on", "--no-wait")
    assert sent.code == 0, sent.err

    async def taken() -> bool:
        commands = await store.list_commands(agent.id)
        return bool(commands) and all(c.claimed_at for c in commands)

    await eventually(taken, timeout=60, what="the plain message taken by the run")
    assert deck(env, "kill", agent.id).code == 0


async def test_the_store_refuses_a_command_whose_payload_holds_a_secret(tmp_path: Path) -> None:
    async with Store.open(tmp_path / "agentdeck.db") as store:
        with pytest.raises(SecretNotKept) as refused:
            await store.enqueue_command("a1", "send", {"text": SECRET_TEXT})
        assert KEY not in str(refused.value)
        assert await store.list_commands("a1") == []
        await store.enqueue_command("a1", "send", {"text": "hello"})
        assert [c.payload for c in await store.list_commands("a1")] == [{"text": "hello"}]
