"""What checking a token costs a request: the first sight of a token (store look-up
+ scrypt) and every later one (SHA-256 + a dict look-up), through ``Identity``, on a
real SQLite store with N users' tokens. Then the dashboard's sessions: a login
(a row written), a request with a session this process remembers (SHA-256 + a dict
look-up), one it never saw (another node's, or before a restart: a store read),
and a forged cookie (a store miss).

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/auth.py [--tokens 200]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from _common import header, median, percentile
from agentdeck.core.roles import Role
from agentdeck.daemon.identity import Identity
from agentdeck.store.store import Store
from agentdeck.store.users import UserStore


async def main(tokens: int, rounds: int) -> None:
    header("token check per request")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "agentdeck.db")
        try:
            identity = Identity(UserStore(store), session_ttl=3600)
            await identity.bootstrap("the-token-file-token-0123456789")
            secrets = []
            for i in range(tokens):
                await identity.add_user(f"user{i}", Role.OPERATOR)
                secrets.append((await identity.create_token(f"user{i}"))[1])
            first = []
            for secret in secrets:
                t0 = time.perf_counter()
                assert await identity.by_token(secret) is not None
                first.append((time.perf_counter() - t0) * 1000)
            later = []
            for _ in range(rounds):
                for secret in secrets:
                    t0 = time.perf_counter()
                    assert await identity.by_token(secret) is not None
                    later.append((time.perf_counter() - t0) * 1000)
            wrong = []
            for i in range(200):
                t0 = time.perf_counter()
                assert await identity.by_token(f"wrong-token-{i:04d}-abcdefghijkl") is None
                wrong.append((time.perf_counter() - t0) * 1000)
            sessions = await _sessions(identity, secrets, rounds)
        finally:
            await store.close()
    print(f"tokens in the store: {tokens}")
    for name, values in (
        ("first sight (store + scrypt)", first),
        ("later requests (cached)", later),
        ("wrong token (store miss)", wrong),
        *sessions,
    ):
        print(
            f"  {name:<30} median {median(values):8.3f} ms  p99 {percentile(values, 99):8.3f} ms"
            f"  (n={len(values)})"
        )


async def _sessions(
    identity: Identity, secrets: list[str], rounds: int
) -> list[tuple[str, list[float]]]:
    logins, ids = [], []
    for secret in secrets:
        t0 = time.perf_counter()
        started = await identity.login(secret)
        logins.append((time.perf_counter() - t0) * 1000)
        assert started is not None
        ids.append(started[0])
    cached = []
    for _ in range(rounds):
        for session_id in ids:
            t0 = time.perf_counter()
            assert await identity.by_session(session_id) is not None
            cached.append((time.perf_counter() - t0) * 1000)
    out = [("login (session made)", logins), ("session (cached)", cached)]
    if hasattr(identity, "sessions"):  # kept in the store (an older one: in memory)
        other = Identity(identity.users, session_ttl=3600)  # another node, or a restart
        unseen = []
        for session_id in ids:
            t0 = time.perf_counter()
            assert await other.by_session(session_id) is not None
            unseen.append((time.perf_counter() - t0) * 1000)
        out.append(("session after a restart", unseen))
    forged = []
    for i in range(200):
        t0 = time.perf_counter()
        assert await identity.by_session(f"forged-session-{i:04d}-abcdefghijklmnop") is None
        forged.append((time.perf_counter() - t0) * 1000)
    out.append(("forged session cookie", forged))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.rounds))
