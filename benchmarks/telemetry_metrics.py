"""Metrics pushed over OTLP: the daemon CPU the push adds (goal: negligible).

The daemon's deck (``open_deck``) on a fresh SQLite home holding ``--agents``
agents, the telemetry follower's ``Tally`` at its label bounds (200 tool names,
the event types, every approval and ask outcome, the waits), and the push
(``telemetry.metrics.OtlpMetrics``) sending to an OTLP/HTTP receiver in another
process (its CPU is not ours), which answers 200.

Two figures. One push's CPU: ``--pushes`` pushes back to back (the store read on
the loop, the collection, encoding and sending in its thread), the process's CPU
time divided by them; at an interval of I seconds the push costs that over I of
one core. And a window: the deck idle for ``--seconds``, without a push, with one
every second, with one every minute (the default), in interleaved rounds; the
process CPU each used, medians, the difference to no push as a share of a core.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/telemetry_metrics.py \\
        [--agents 1000] [--pushes 200] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import header, median
from agentdeck.core.agent import Agent, AgentSpec, AgentState
from agentdeck.core.events import spawned_events
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.deck import Deck
from agentdeck.settings import Settings
from agentdeck.telemetry.counts import Tally, read_gauges
from agentdeck.telemetry.metrics import OtlpMetrics
from agentdeck.telemetry.push import PushConfig

RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def full_tally() -> Tally:
    tally = Tally()
    tally.events = {f"event_type_{i}": 1000 + i for i in range(30)}
    tally.tool_calls = {f"mcp__tool_{i}": 10 + i for i in range(200)}
    tally.turns = {"ok": 5000, "error": 12}
    tally.approvals = {"allow": 300, "deny": 20, "ask": 4}
    tally.answers = {"agent": 30, "user": 8, "timeout": 1}
    tally.merges = {"landed": 40, "refused": 2, "failed": 1, "cancelled": 1}
    tally.asks = 39
    return tally


async def populate(deck: Deck, agents: int) -> None:
    now = time.time()
    states = list(AgentState)
    for i in range(agents):
        made = Agent(
            id=f"a{i:05d}", name=f"a{i}", state=states[i % len(states)],
            spec=AgentSpec(prompt="p"), cwd="/", created_at=now, updated_at=now,
            input_tokens=1000 + i, output_tokens=100 + i, cost_usd=0.01,
        )  # fmt: skip
        await deck._store.record(spawned_events(made), made)


async def one_push_cpu(push: OtlpMetrics, tally: Tally, pushes: int) -> tuple[float, float]:
    """CPU seconds and wall seconds of one push (median of ``pushes``, in batches of 10)."""
    cpu, wall = [], []
    for _ in range(pushes // 10):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(10):
            tally.approval_wait.observe(3.0)  # the histogram has something new each time
            await push.push()
        cpu.append((time.process_time() - c0) / 10)
        wall.append((time.perf_counter() - w0) / 10)
    return median(cpu), median(wall)


async def store_read_cpu(deck: Deck, reads: int) -> float:
    """CPU seconds of one ``read_gauges`` (what a push holds the loop for; a
    /metrics scrape reads the same)."""
    c0 = time.process_time()
    for _ in range(reads):
        await read_gauges(deck)
    return (time.process_time() - c0) / reads


async def window(deck: Deck, url: str, interval: float | None, seconds: float) -> float:
    """CPU seconds the process used while idle for ``seconds`` with a push every
    ``interval`` (None: none)."""
    push = None
    if interval is not None:
        push = OtlpMetrics.to(PushConfig(url, interval), deck, full_tally())
        push.start()
    c0 = time.process_time()
    await asyncio.sleep(seconds)
    used = time.process_time() - c0
    if push is not None:
        await push.stop()
    return used


async def main(agents: int, pushes: int, seconds: float, rounds: int) -> None:
    header("Metrics pushed over OTLP/HTTP: CPU added to the daemon")
    print(f"  {agents} agents in the store; the Tally at its label bounds (200 tools)")
    receiver = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RECEIVER, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert receiver.stdout is not None
        port = (await receiver.stdout.readline()).decode().strip()
        url = f"http://127.0.0.1:{port}/v1/metrics"
        with tempfile.TemporaryDirectory() as home:
            settings = Settings(home=Path(home), port=0)
            settings.ensure_home()
            deck = await open_deck(settings, embedded=True)
            try:
                await populate(deck, agents)
                tally = full_tally()
                push = OtlpMetrics.to(PushConfig(url, 3600.0), deck, tally)
                await push.push()  # warm: the SDK's first collection, the connection
                cpu, wall = await one_push_cpu(push, tally, pushes)
                await push.stop()
                on_loop = await store_read_cpu(deck, pushes)
                print(f"  one push: {cpu * 1e3:.2f} ms CPU, {wall * 1e3:.2f} ms wall (median)")
                print(
                    f"    of which on the event loop (the store's figures): {on_loop * 1e3:.2f} ms"
                )
                for label, every in (("1 s", 1.0), ("60 s (default)", 60.0)):
                    print(f"    every {label}: {cpu / every * 100:.3f}% of one core")
                used: dict[str, list[float]] = {"none": [], "1 s": [], "60 s": []}
                for _ in range(rounds):
                    for label, every in (("none", None), ("1 s", 1.0), ("60 s", 60.0)):
                        used[label].append(await window(deck, url, every, seconds))
                base = median(used["none"])
                print(f"  idle for {seconds:g} s, {rounds} rounds interleaved (median CPU):")
                for label, values in used.items():
                    added = (median(values) - base) / seconds * 100
                    print(
                        f"    push {label:>4}: {median(values) * 1e3:7.1f} ms CPU"
                        + ("" if label == "none" else f"  ({added:+.3f}% of one core)")
                    )
            finally:
                await deck.close()
    finally:
        receiver.terminate()
        await asyncio.wait_for(receiver.wait(), 10)

    print("  load average after: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--pushes", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(args.agents, args.pushes, args.seconds, args.rounds))
