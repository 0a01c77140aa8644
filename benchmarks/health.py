"""What the deck's watching of itself costs: the loop monitor's work per wake-up
(a sample recorded, the minute's lag summarised), an idle loop's CPU with the
monitor (and a watchdog ping per wake-up to a real datagram socket) and without,
alternating; and ``Deck.readiness`` with its store write probe made and cached.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/health.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import tempfile
import time
from pathlib import Path

from _common import command_line, header, median, percentile
from agentdeck.daemon.compose import open_deck
from agentdeck.daemon.health import LoopMonitor
from agentdeck.daemon.watchdog import Watchdog
from agentdeck.settings import Settings


def per_tick(rounds: int = 20_000) -> tuple[float, float]:
    """µs to record one sample and to summarise a full minute (120 samples)."""
    now = [0.0]
    monitor = LoopMonitor(clock=lambda: now[0])  # a clock of its own: 0.5 s a wake-up
    t0 = time.perf_counter()
    for _ in range(rounds):
        now[0] += 0.5
        monitor.record(0.001)  # the minute's 120 kept, older ones dropped
    record = (time.perf_counter() - t0) / rounds * 1e6
    t0 = time.perf_counter()
    for _ in range(rounds // 10):
        monitor.lag()
    summary = (time.perf_counter() - t0) / (rounds // 10) * 1e6
    return record, summary


async def idle_cpu(seconds: float, watched: bool, address: str | None) -> float:
    """Process CPU ms per minute of an idle loop, with or without the monitor."""
    monitor = LoopMonitor()
    if address is not None:
        watchdog = Watchdog(address, every=0.0)
        monitor.on_tick(watchdog.tick)
    if watched:
        monitor.start()
    cpu0 = time.process_time()
    await asyncio.sleep(seconds)
    used = time.process_time() - cpu0
    await monitor.stop()
    return used / seconds * 60 * 1000


async def readiness(rounds: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home")
        deck = await open_deck(settings, embedded=True)
        try:
            probed, cached = [], []
            for _ in range(rounds):
                deck._store_seen = None  # the write probe made
                t0 = time.perf_counter()
                await deck.readiness()
                probed.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                await deck.readiness()  # within the probe's 5 s: cached
                cached.append((time.perf_counter() - t0) * 1000)
            return probed, cached
        finally:
            await deck.close()


async def main(seconds: float, rounds: int) -> None:
    header("the deck watching itself")
    record, summary = per_tick()
    print(f"per wake-up: record {record:.2f} µs, minute's summary {summary:.1f} µs")
    where = Path(tempfile.mkdtemp(prefix="adh-", dir="/tmp"))
    path = str(where / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.setblocking(False)

        async def drain() -> None:
            while True:
                try:
                    while True:
                        sock.recv(64)
                except BlockingIOError:
                    await asyncio.sleep(0.1)

        drainer = asyncio.create_task(drain())
        plain, watched = [], []
        for _ in range(3):  # alternating: the machine is shared and noisy
            plain.append(await idle_cpu(seconds, False, None))
            watched.append(await idle_cpu(seconds, True, path))
        drainer.cancel()
    Path(path).unlink()
    where.rmdir()
    print(
        f"idle loop CPU, ms per minute (median of 3 runs of {seconds:.0f} s; the drain task runs "
        f"in both): without {median(plain):.1f}, with monitor + watchdog {median(watched):.1f}"
    )
    probed, cached = await readiness(rounds)
    print(
        f"Deck.readiness ({rounds} rounds): write probe made p50 {median(probed):.2f} ms "
        f"p95 {percentile(probed, 95):.2f} ms; cached p50 {median(cached):.3f} ms"
    )
    print(f"command: {command_line()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.rounds))
