"""Event spine throughput: persisted ingest, and SSE fan-out latency.

    .venv/bin/python benchmarks/events.py [--ingest-events 100000] [--tasks 50]
        [--subscribers 100] [--procs 4] [--rate 1000] [--seconds 10] [--skip-ingest]

(a) Ingest: ``Store.append`` from ``--tasks`` concurrent tasks, 1 and 20 events
    per call, into a fresh SQLite file (``store_ingest.py``'s measurement).
    Goal: >= 20,000 events/s.
(b) Fan-out: the real daemon app (``create_app`` on a ``Deck``, uvicorn on
    127.0.0.1, ephemeral port) with ``--subscribers`` SSE clients (httpx
    streams) spread over ``--procs`` separate processes, so client work does not
    share the server's CPU time slice. A producer in the daemon appends
    ``--rate`` events/s for ``--seconds`` through ``Store.append``; each event
    carries its append wall-clock time. Every subscriber checks it got every
    event once, in order, and records receive time - append time.
    Goal: p99 <= 100 ms, all events delivered to every subscriber.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import os
import socket
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from _common import percentile
from agentdeck.daemon.compose import open_deck

SENT_KEY = b'"sent":'


@dataclass
class SubscriberResult:
    received: int
    in_order: bool
    dropped: bool
    latencies: array[float]


# -- subscriber processes ------------------------------------------------------------


def subscriber_process(
    url: str, token: str, connections: int, total: int, deadline: float, out: Any
) -> None:
    """One process holding ``connections`` SSE streams; puts a list of results."""
    results = asyncio.run(_subscribe_all(url, token, connections, total, deadline, out))
    done = [(r.received, r.in_order, r.dropped, r.latencies.tobytes()) for r in results]
    out.put(("done", (time.process_time(), done)))


async def _subscribe_all(
    url: str, token: str, connections: int, total: int, deadline: float, out: Any
) -> list[SubscriberResult]:
    limits = httpx.Limits(max_connections=connections + 1)
    headers = {"Authorization": f"Bearer {token}"}
    timeout = httpx.Timeout(30.0, read=None)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=timeout
    ) as client:
        ready = asyncio.Barrier(connections + 1)
        tasks = [
            asyncio.create_task(_subscribe(client, total, deadline, ready))
            for _ in range(connections)
        ]
        await ready.wait()
        out.put(("ready", connections))
        return list(await asyncio.gather(*tasks))


async def _subscribe(
    client: httpx.AsyncClient, total: int, deadline: float, ready: asyncio.Barrier
) -> SubscriberResult:
    latencies = array("d")
    last_id = 0
    in_order = True
    dropped = False
    buffer = b""
    async with client.stream("GET", "/api/events/stream", params={"after": 0}) as response:
        response.raise_for_status()
        chunks = response.aiter_raw()
        buffer = await anext(chunks)  # `retry:` - the stream is open
        await ready.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(deadline - time.time()):
                async for chunk in chunks:
                    now = time.time()
                    buffer += chunk
                    *messages, buffer = buffer.split(b"\n\n")
                    for message in messages:
                        if message.startswith(b"id: "):
                            event_id = int(message[4 : message.index(b"\n")])
                            in_order = in_order and event_id == last_id + 1
                            last_id = event_id
                            at = message.index(SENT_KEY) + len(SENT_KEY)
                            sent = float(message[at : message.index(b"}", at)])
                            latencies.append(now - sent)
                        elif message.startswith(b"event: dropped"):
                            dropped = True
                    if last_id >= total or dropped:
                        break
    return SubscriberResult(len(latencies), in_order and last_id == total, dropped, latencies)


# -- the daemon side -----------------------------------------------------------------


async def fan_out(args: argparse.Namespace) -> None:
    import uvicorn

    from agentdeck.core.events import Notice
    from agentdeck.daemon.home import ensure_token
    from agentdeck.settings import Settings
    from agentdeck.web.app import create_app
    from agentdeck.web.sse import close_streams

    total = int(args.rate * args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home")
        deck = await open_deck(settings)
        token = ensure_token(settings)
        app = create_app(deck, token=token, settings=settings)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=3
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        await _until(lambda: server.started, "the server to start")

        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        deadline = time.time() + 60 + args.seconds * 3
        shares = [len(part) for part in _split(range(args.subscribers), args.procs)]
        procs = [
            ctx.Process(target=subscriber_process, args=(url, token, n, total, deadline, out))
            for n in shares
        ]
        for p in procs:
            p.start()
        try:
            ready = 0
            while ready < args.subscribers:
                kind, value = await asyncio.to_thread(out.get, True, 60)
                assert kind == "ready", kind
                ready += value
            await _until(lambda: deck.followers >= args.subscribers, "every subscription")

            cpu_before = time.process_time()
            started = time.monotonic()
            produced = 0
            commits: list[float] = []
            while produced < total:
                due = min(total, int((time.monotonic() - started) * args.rate) + 1)
                if due > produced:
                    now = time.time()
                    await deck._store.append(
                        [
                            Notice(
                                agent_id="bench",
                                ts=now,
                                kind="bench",
                                message="",
                                detail={"sent": now},
                            )
                            for _ in range(due - produced)
                        ]
                    )
                    commits.append(time.time() - now)
                    produced = due
                await asyncio.sleep(0.0005)
            elapsed = time.monotonic() - started

            results: list[SubscriberResult] = []
            client_cpu = 0.0
            while len(results) < args.subscribers:
                kind, (cpu, done) = await asyncio.to_thread(
                    out.get, True, deadline - time.time() + 10
                )
                client_cpu += cpu
                results += [
                    SubscriberResult(n, ok, dropped, _floats(raw)) for n, ok, dropped, raw in done
                ]
            server_cpu = time.process_time() - cpu_before
        finally:
            for p in procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.kill()
            close_streams(app.state)
            server.should_exit = True
            await serving
            await deck.close()
    _report(args, total, elapsed, results)
    print(
        f"  commit (append call -> committed): p50 {percentile(commits, 50) * 1000:.1f} ms, "
        f"p99 {percentile(commits, 99) * 1000:.1f} ms over {len(commits):,} appends"
    )
    print(
        f"  CPU: daemon {server_cpu:.1f} s, subscriber processes {client_cpu:.1f} s "
        f"over {elapsed:.1f} s on {os.cpu_count()} CPUs"
    )


async def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def _floats(raw: bytes) -> array[float]:
    values = array("d")
    values.frombytes(raw)
    return values


def _split(items: range, parts: int) -> Iterator[range]:
    size, extra = divmod(len(items), parts)
    start = 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        yield items[start:end]
        start = end


def _report(
    args: argparse.Namespace,
    total: int,
    elapsed: float,
    results: list[SubscriberResult],
) -> None:
    latencies = [x * 1000 for r in results for x in r.latencies]
    complete = sum(1 for r in results if r.received == total and r.in_order)
    print(
        f"(b) SSE fan-out: {args.subscribers} subscribers in {args.procs} processes, "
        f"{args.rate:,.0f} events/s for {args.seconds:g} s"
    )
    print(f"  produced:  {total:,} events in {elapsed:.2f} s ({total / elapsed:,.0f}/s)")
    print(
        f"  delivered: {complete}/{len(results)} subscribers got all {total:,} events "
        f"in order, no gap, no duplicate; per subscriber min "
        f"{min(r.received for r in results):,}, max {max(r.received for r in results):,}; "
        f"dropped: {sum(r.dropped for r in results)}"
    )
    if latencies:
        print(
            "  latency (append -> received): "
            f"p50 {percentile(latencies, 50):.1f} ms, p90 {percentile(latencies, 90):.1f} ms, "
            f"p99 {percentile(latencies, 99):.1f} ms, max {max(latencies):.1f} ms "
            f"(goal p99 <= 100 ms)"
        )


def ingest(args: argparse.Namespace) -> None:
    from store_ingest import _ingest

    print(
        f"(a) store ingest: {args.ingest_events:,} events from {args.tasks} tasks "
        f"(goal >= 20,000 events/s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for chunk in (1, 20):
            rate = asyncio.run(
                _ingest(
                    Path(tmp) / f"chunk{chunk}.db",
                    total=args.ingest_events,
                    tasks=args.tasks,
                    chunk=chunk,
                    batch_size=500,
                )
            )
            print(f"  {chunk:>2} event(s) per append: {rate:>10,.0f} events/s")


def main() -> None:
    from _common import header

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--skip-ingest", action="store_true")
    args = parser.parse_args()
    header("agentdeck events benchmark")
    if not args.skip_ingest:
        ingest(args)
    asyncio.run(fan_out(args))


if __name__ == "__main__":
    main()
