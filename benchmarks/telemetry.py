"""Event ingest with OpenTelemetry export on vs off (goal: on <= 1.05x off).

The daemon's deck (``open_deck``, its event hub) on a fresh SQLite home, with its
telemetry follower as ``agentdeck up`` starts it: off (the counts for /metrics
only) or on (spans built and sent over OTLP/HTTP to a local receiver that
answers 200). ``--tasks`` concurrent writers append ``--events`` events through
``Store.append`` in batches of ``--batch``, shaped like agents' turns (spawn,
message, tool calls and results with inputs, turn end, cost, final state); one
round measures the ingest (first append to the last one committed: the goal's
figure), each append's latency, the follower's catch-up (to its having taken the
last event in: the spans built and queued for export) and the process's CPU time.
Unpaced, the writers saturate the machine and any CPU the spans take shows; with
``--rate`` they append at a steady pace, as agents do, and the append latency says
what an agent's event waits. Rounds alternate off/on, on/off, … so the machine's
drift and whatever favours the second of a pair hit both alike; the ratio of the
medians is given with a 95 % bootstrap interval over the rounds, which says whether
the rounds run tell it apart from the goal on a machine this noisy. Before each
round, ``--warm`` events of another tree are ingested (and, on, their spans
exported), so the exporter is a daemon's that has been up a while,
not one just started (its first exports, its heap growing).

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/telemetry.py \\
        [--events 20000] [--tasks 10] [--batch 20] [--rounds 5] [--rate 0] [--ratio 1]
        [--warm 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import header, median, percentile, ratio_interval
from agentdeck.core.events import (
    AgentSpawned,
    CostUpdated,
    Event,
    StateChanged,
    ToolCalled,
    ToolReturned,
    TurnCompleted,
    UserMessageSent,
)
from agentdeck.daemon.compose import open_deck
from agentdeck.settings import Settings
from agentdeck.telemetry.service import Telemetry
from agentdeck.telemetry.service import start as start_telemetry

# The collector runs in a process of its own, as a real one does: its request
# threads would take the GIL from the daemon's loop in this one.
COLLECTOR = """
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

counts, bodies = {"requests": 0, "bytes": 0, "spans": 0}, []

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        counts["requests"] += 1
        counts["bytes"] += len(body)
        bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):  # the counts; the spans decoded now (between rounds)
        while bodies:
            request = ExportTraceServiceRequest.FromString(bodies.pop())
            counts["spans"] += sum(
                len(s.spans) for g in request.resource_spans for s in g.scope_spans
            )
        out = json.dumps(counts).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        return

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class Collector:
    """A local OTLP/HTTP endpoint: reads each export and answers 200."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", COLLECTOR], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def counts(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/counts", timeout=60) as answer:
            found: dict[str, int] = json.loads(answer.read())
            return found

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def agent_events(agent: str, parent: str | None, count: int) -> list[Event]:
    """About ``count`` events of one agent: turns of three tool calls each."""
    now = time.time()
    spec = {"model": "claude-sonnet", "template": "engineer", "profile": "default"}
    out: list[Event] = [
        AgentSpawned(agent_id=agent, ts=now, name=agent, cwd="/w", spec=spec, parent_id=parent),
        StateChanged(agent_id=agent, ts=now, old=None, new="running"),
    ]
    turn = 0
    while len(out) < count - 1:
        turn += 1
        out.append(UserMessageSent(agent_id=agent, ts=now, text=f"turn {turn}: go on"))
        for n in range(3):
            call = f"{agent}-{turn}-{n}"
            tool_input = {"command": f"pytest -q tests/test_{n}.py", "description": "run"}
            out += [
                ToolCalled(agent_id=agent, ts=now, tool_use_id=call, tool="Bash", input=tool_input),
                ToolReturned(agent_id=agent, ts=now, tool_use_id=call, output="3 passed", size=8),
            ]
        out += [
            TurnCompleted(
                agent_id=agent, ts=now, subtype="success", is_error=False, terminal_reason=None,
                result="done", session_id="s", num_turns=1, duration_ms=900, cost_usd=0.01,
                input_tokens=1200, output_tokens=300,
            ),
            CostUpdated(agent_id=agent, ts=now, cost_usd=0.01 * turn, input_tokens=1200,
                        output_tokens=300, delta_usd=0.01),
        ]  # fmt: skip
    out.append(StateChanged(agent_id=agent, ts=now, old="running", new="done"))
    return out


Round = tuple[float, float, float, list[float], float]


def child_cpu(telemetry: Telemetry) -> float:
    """CPU seconds of the span exporter's process so far (0: none)."""
    process = getattr(telemetry.spans, "process", None)
    if process is None:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_round(
    root: Path,
    on: bool,
    events: int,
    tasks: int,
    batch: int,
    url: str,
    rate: float = 0.0,
    ratio: float = 1.0,
    warm: int = 0,
) -> Round:
    home = root / f"{'on' if on else 'off'}-{time.monotonic_ns()}"
    settings = Settings(home=home, claude_config_dir=root / "claude", warm_pool=0)
    if on:
        settings = settings.model_copy(update={"otel_endpoint": url, "otel_sample_ratio": ratio})
    deck = await open_deck(settings, embedded=True)
    telemetry: Telemetry | None = None
    try:
        telemetry = await start_telemetry(deck, settings)
        assert telemetry.exporting is on
        # Its exporter's process up (the SDK imported) and warm (a tree's spans built,
        # encoded and posted, its heap grown) before agents come, as in a daemon that
        # has been up a while: its boot is not the ingest's. Off ingests the same.
        await telemetry.flush()
        store = deck._store
        tag = home.name
        if warm:
            warming = agent_events(f"{tag}-warm", None, warm)
            for i in range(0, len(warming), batch):
                last = (await store.append(warming[i : i + batch]))[-1].id
            await telemetry.seen(last, timeout=600)
            await telemetry.flush()
        per_task = events // tasks
        # Trees of two agents (a parent and its child), their ids new each round so
        # a sample ratio below 1 picks other trees each time.
        work = [
            agent_events(f"{tag}-ag{t}", f"{tag}-ag{t - 1}" if t % 2 else None, per_task)
            for t in range(tasks)
        ]

        latencies: list[float] = []

        async def writer(mine: list[Event]) -> int:
            last = 0
            for k, i in enumerate(range(0, len(mine), batch)):
                if rate:  # paced: this writer's share of ``rate`` events a second
                    due = started + k * batch * tasks / rate
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                sent = time.perf_counter()
                last = (await store.append(mine[i : i + batch]))[-1].id
                latencies.append(time.perf_counter() - sent)
            return last

        started = time.perf_counter()
        await writer(work[0][:1])  # the root is spawned first, as in a real tree
        work[0] = work[0][1:]
        latencies.clear()
        started, cpu, cpu_child = time.perf_counter(), time.process_time(), child_cpu(telemetry)
        lasts = await asyncio.gather(*(writer(w) for w in work))
        ingested = time.perf_counter() - started
        await telemetry.seen(max(lasts), timeout=600)
        caught_up = time.perf_counter() - started
        await telemetry.flush()  # what the exporter's process still has to send
        cpu_child = child_cpu(telemetry) - cpu_child
        return ingested, caught_up, time.process_time() - cpu, latencies, cpu_child
    finally:
        await deck.close()
        if telemetry is not None:
            await telemetry.stop()


async def main(
    events: int, tasks: int, batch: int, rounds: int, rate: float, ratio: float, warm: int
) -> None:
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)
    header("event ingest, OpenTelemetry export on vs off")
    pace = f"paced at {rate:,.0f} events/s" if rate else "as fast as they go"
    print(f"  {events} events, {tasks} writers ({pace}), batches of {batch}, {rounds} rounds each")
    print(f"  on: AGENTDECK_OTEL_SAMPLE_RATIO={ratio} (the share of agent trees traced)")
    print(f"  before each round: {warm} events ingested (and, on, their spans exported)")
    collector = Collector()
    spans: list[int] = []  # received, by round on
    off: list[Round] = []
    on: list[Round] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            await one_round(root, False, events // 10, tasks, batch, collector.url)  # warm-up
            url = collector.url
            for n in range(rounds):
                # off, on, then on, off: what runs second (a warmer cache, the last
                # round's leftovers) and the machine's drift fall on both alike.
                for exporting in (False, True) if n % 2 == 0 else (True, False):
                    if not exporting:
                        off.append(
                            await one_round(root, False, events, tasks, batch, url, rate, 1, warm)
                        )
                        continue
                    before = collector.counts()["spans"]
                    on.append(
                        await one_round(root, True, events, tasks, batch, url, rate, ratio, warm)
                    )
                    spans.append(collector.counts()["spans"] - before)
        counts = collector.counts()
    finally:
        collector.close()
    for what, i in (("ingest (appends committed)", 0), ("follower caught up", 1)):
        m_off, m_on = median([r[i] for r in off]), median([r[i] for r in on])
        print(f"  {what}:")
        print(f"    off: median {m_off * 1000:.0f} ms ({events / m_off:,.0f} events/s)")
        print(f"    on:  median {m_on * 1000:.0f} ms ({events / m_on:,.0f} events/s)")
        print(f"    on/off: {m_on / m_off:.3f}x" + (" (goal <= 1.05x)" if i == 0 else ""))
        low, high = ratio_interval([r[i] for r in off], [r[i] for r in on])
        print(f"    95 % interval of that ratio (bootstrap over the rounds): {low:.3f}-{high:.3f}x")
        paired = sorted(b[i] / a[i] for a, b in zip(off, on, strict=True))
        print(f"    each pair's on/off (run side by side): median {median(paired):.3f}x, "
              f"from {paired[0]:.2f} to {paired[-1]:.2f}")  # fmt: skip
    lat_off = [x for r in off for x in r[3]]
    lat_on = [x for r in on for x in r[3]]
    print(f"  one append of {batch} events (Store.append until committed):")
    for name, lat in (("off", lat_off), ("on", lat_on)):
        p50, p99 = median(lat) * 1000, percentile(lat, 99) * 1000
        print(f"    {name}: median {p50:.2f} ms, p99 {p99:.2f} ms")
    print(f"    on/off median: {median(lat_on) / median(lat_off):.3f}x")
    c_off, c_on = median([r[2] for r in off]), median([r[2] for r in on])
    print("  CPU time of the process (every thread: the loop, the writer, the exporter):")
    print(f"    off: {c_off / events * 1e6:.0f} us/event, on: {c_on / events * 1e6:.0f} us/event")
    print(f"    on/off: {c_on / c_off:.3f}x")
    print(
        f"  span exporter's process (on): {median([r[4] for r in on]) / events * 1e6:.0f} us/event"
    )
    print(f"  exported: {counts['requests']} OTLP requests, {counts['bytes'] / 1e6:.1f} MB")
    print(f"  spans at the receiver, by round on: {spans}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rate", type=float, default=0.0, help="events/s in all (0: unpaced)")
    parser.add_argument("--ratio", type=float, default=1.0, help="share of agent trees traced")
    parser.add_argument(
        "--warm", type=int, default=2000, help="events ingested and exported before a round"
    )
    args = parser.parse_args()
    asyncio.run(
        main(args.events, args.tasks, args.batch, args.rounds, args.rate, args.ratio, args.warm)
    )
