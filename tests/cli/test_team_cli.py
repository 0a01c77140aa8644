"""``agentdeck users`` / ``agentdeck tokens``: on the store without a daemon, through
the API with one; a token's secret is printed once and never stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from agentdeck.settings import Settings
from tests.support.deckcli import deck, deck_env
from tests.support.served import serving

pytestmark = pytest.mark.anyio


def test_users_and_tokens_without_a_daemon(tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    bad = deck(env, "users", "add", "eve", "--role", "root")
    assert bad.code == 2 and "unknown role" in bad.err
    added = deck(env, "users", "add", "alice", "--role", "operator")
    assert added.code == 0 and "added alice (operator)" in added.out
    listed = deck(env, "users", "list", "--json")
    # The token file's token became the first admin's, as the daemon does it.
    assert [(u["name"], u["role"]) for u in listed.json()] == [
        ("admin", "admin"), ("alice", "operator"),
    ]  # fmt: skip
    bad = deck(env, "tokens", "create", "--user", "alice", "--expires", "soon")
    assert bad.code == 2 and "invalid duration" in bad.err
    made = deck(env, "tokens", "create", "--user", "alice", "--expires", "30d", "--name", "ci")
    assert made.code == 0, made.err
    secret, note = made.out.splitlines()
    assert "only time it is shown" in note
    token_id = note.split()[1]
    db = b"".join(p.read_bytes() for p in (tmp_path / "home").glob("agentdeck.db*"))
    assert secret.encode() not in db
    listed = deck(env, "tokens", "list", "--user", "alice")
    assert token_id in listed.out and secret not in listed.out
    assert deck(env, "tokens", "revoke", token_id).code == 0
    assert "revoked" in deck(env, "tokens", "list").out
    last = deck(env, "users", "remove", "admin")
    assert last.code == 1 and "last admin" in last.err


async def test_users_and_tokens_through_the_daemon(settings: Settings, tmp_path: Path) -> None:
    env = deck_env(tmp_path)
    async with serving(settings) as served:
        added = await asyncio.to_thread(deck, env, "users", "add", "bob", "--role", "viewer")
        assert added.code == 0, added.err
        assert [u.name for u in await served.deck.identity.users.list_users()] == ["admin", "bob"]
        made = await asyncio.to_thread(deck, env, "tokens", "create", "--user", "bob", "--json")
        assert made.code == 0, made.err
        secret, token_id = made.json()["token"], made.json()["id"]
        async with httpx.AsyncClient(
            base_url=served.info.url, headers={"Authorization": f"Bearer {secret}"}
        ) as bob:
            assert (await bob.get("/api/agents")).status_code == 200
            assert (await bob.post("/api/agents", json={"prompt": "x"})).status_code == 403
            revoked = await asyncio.to_thread(deck, env, "tokens", "revoke", token_id)
            assert revoked.code == 0, revoked.err
            assert (await bob.get("/api/agents")).status_code == 401
        removed = await asyncio.to_thread(deck, env, "users", "remove", "bob")
        assert removed.code == 0 and "removed bob" in removed.out
