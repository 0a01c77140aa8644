"""What checking a token costs a request: the first sight of a token (store look-up
+ scrypt) and every later one (SHA-256 + a dict look-up), through ``Identity``, on a
real SQLite store with N users' tokens.

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
        finally:
            await store.close()
    print(f"tokens in the store: {tokens}")
    for name, values in (
        ("first sight (store + scrypt)", first),
        ("later requests (cached)", later),
        ("wrong token (store miss)", wrong),
    ):
        print(
            f"  {name:<30} median {median(values):8.3f} ms  p99 {percentile(values, 99):8.3f} ms"
            f"  (n={len(values)})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.rounds))
