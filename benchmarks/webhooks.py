"""What a webhook delivery costs the deck (``Deck.receive_webhook``, in process, no
HTTP): a refused signature (the secret file read, the HMAC compared), a replayed
delivery id (one write transaction), and a signed delivery to the agent placed (the
202: template resolved, prompt rendered in the sandbox, rows written, agent started
on the scripted model), with a 100 KB GitHub-like payload.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/webhooks.py \
        [--rounds 200] [--agents 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import tempfile
import time
from pathlib import Path

from _common import header, median, percentile
from agentdeck.core.triggers import Trigger, fingerprint, sign
from agentdeck.daemon.compose import open_deck
from agentdeck.settings import Settings
from agentdeck.store.triggers import TriggerStore

SECRET = b"benchmark-secret-0123456789abcdef"
PAYLOAD = json.loads(
    (Path(__file__).parent.parent / "tests/fixtures/github/pull_request.json").read_text()
)
PAYLOAD["pull_request"]["body"] = "A long description. " * 5000  # ~100 KB
BODY = json.dumps(PAYLOAD).encode()


def line(what: str, ms: list[float]) -> None:
    print(f"{what}: median {median(ms):.2f} ms, p95 {percentile(ms, 95):.2f} ms ({len(ms)} rounds)")


async def main(rounds: int, agents: int) -> None:
    logging.getLogger("agentdeck.daemon.deck.triggers").setLevel(logging.ERROR)  # 1 line each
    header("webhook deliveries")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        secret = root / "hook.secret"
        secret.write_bytes(SECRET)
        secret.chmod(0o600)
        (root / "project").mkdir()
        settings = Settings(home=root / "home", claude_config_dir=root / "claude", warm_pool=0)
        deck = await open_deck(settings, embedded=True)
        try:
            triggers = TriggerStore(deck._store)
            await triggers.add(
                Trigger(
                    "pr", "reviewer", str(root / "project"),
                    "Review {{ payload.pull_request.html_url }}", str(secret),
                    fingerprint(SECRET), 600, time.time(), "admin", "chat",
                )
            )  # fmt: skip
            good = sign(SECRET, BODY)
            bad = sign(b"not-the-secret-0123456789", BODY)

            async def timed(signature: str, delivery: str, want: int) -> float:
                t0 = time.perf_counter()
                answer = await deck.receive_webhook(
                    "pr", BODY, signature=signature, delivery=delivery, event="pull_request"
                )
                ms = (time.perf_counter() - t0) * 1000
                assert answer.status == want, answer
                return ms

            line("401 bad signature", [await timed(bad, f"b{i}", 401) for i in range(rounds)])
            started = [await timed(good, f"g{i}", 202) for i in range(agents)]
            line("202 agent placed", started)
            line("409 replayed id", [await timed(good, "g0", 409) for _ in range(rounds)])
        finally:
            await deck.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--agents", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.agents))
