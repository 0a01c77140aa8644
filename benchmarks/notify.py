"""Notifications: does a hung target slow the event log, or the other targets?

A real store, event hub and notifier in one process; one webhook target that
accepts connections and never answers, one that answers 200 at once (a real HTTP
server in a thread). N approval events are appended one batch at a time, with
the notifier off, then on. Figures: the log's append time per batch (p50/p99) in
both runs, and, with the notifier on, append → received at the good target
(p50/p99). Goal: append times unchanged; every event delivered to the good target.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/notify.py [--events 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import header
from agentdeck.core.events import PermissionRequested
from agentdeck.core.notify import Target, TargetKind
from agentdeck.daemon.hub import EventHub
from agentdeck.notify.service import Notifier
from agentdeck.settings import Settings
from agentdeck.store.store import Store

received: dict[str, float] = {}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        received[json.loads(body)["ref"]] = time.perf_counter()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


async def all_received(sent: dict[str, float], *, deadline: float) -> None:
    """Poll (the receiver is another thread) until each one arrived, or the deadline."""
    for _ in range(int(60 / 0.05)):
        if all(r in received for r in sent) or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.05)


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


async def run(events: int, notify: bool, home: Path, good: str, hung: str) -> list[float]:
    settings = Settings(home=home, notify_timeout_seconds=600.0, notify_queue_size=events + 10)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    hub = EventHub(store)
    await hub.start()
    targets = [
        Target(name="hung", kind=TargetKind.WEBHOOK, url=hung),
        Target(name="good", kind=TargetKind.WEBHOOK, url=good, secret="s" * 32),
    ]
    notifier = Notifier(settings, store, hub, targets if notify else [])
    await notifier.start("http://127.0.0.1:8765")
    appends, sent = [], {}
    try:
        for i in range(events):
            ref = f"ap{notify}{i}"
            start = time.perf_counter()
            sent[ref] = start
            await store.append(
                [PermissionRequested(agent_id="a1", ts=time.time(), request_id=ref, tool="Bash",
                                     input={"command": f"make {i}"})]
            )  # fmt: skip
            appends.append(time.perf_counter() - start)
            await asyncio.sleep(0.002)
        if notify:
            await all_received(sent, deadline=time.monotonic() + 60)
            got = [received[r] - sent[r] for r in sent if r in received]
            print(f"  delivered to the good target: {len(got)}/{events}")
            print(f"  append → received: p50 {pct(got, 0.5):.1f} ms, p99 {pct(got, 0.99):.1f} ms")
    finally:
        await notifier.stop()
        await hub.stop()
        await store.close()
    return appends


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=500)
    args = parser.parse_args()
    header("notify: a hung target beside a good one")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1024)
    good = f"http://127.0.0.1:{server.server_address[1]}/hook"
    hung = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        off = asyncio.run(run(args.events, False, Path(tmp) / "off", good, hung))
        on = asyncio.run(run(args.events, True, Path(tmp) / "on", good, hung))
    for name, values in (("notifier off", off), ("notifier on ", on)):
        print(
            f"  {name}: append p50 {pct(values, 0.5):.2f} ms, p99 {pct(values, 0.99):.2f} ms "
            f"(mean {statistics.mean(values) * 1000:.2f} ms)"
        )
    server.shutdown()
    silent.close()


if __name__ == "__main__":
    main()
