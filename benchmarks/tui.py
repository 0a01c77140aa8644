"""The terminal UI: start-up with many agents, event-to-row latency, a long transcript.

    .venv/bin/python benchmarks/tui.py [--agents 1000] [--rate 1000] [--seconds 5]
        [--transcript 100000]

The real daemon app (``create_app`` on a ``Deck``, uvicorn on 127.0.0.1, ephemeral
port) serves a fresh home seeded with ``--agents`` finished agents and one agent with
a ``--transcript``-event log; the real ``DeckApp`` runs headless (``run_test``) in the
same process and event loop, so daemon, producer and TUI share one core: the figures
are an upper bound of what a TUI in its own process sees.

(a) Start-up: from the app's start to the agent table holding every agent.
    Goal: <= 1 s with 1,000 agents.
(b) Latency: ``--rate`` events/s for ``--seconds`` (``CostUpdated`` for the seeded
    agents, appended through ``Store.append``); for each, the time from its append to
    the redraw of the table that shows its row changed (the clock starts once the
    append has committed). Goal: p99 <= 100 ms at
    1,000 events/s.
(c) Transcript: selecting the long-log agent; the time until its transcript is read,
    and the process's RSS before and after (the pane keeps its last 5,000 lines).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from _common import MIB, header, percentile


async def _until(condition: Callable[[], bool], what: str, timeout: float = 120) -> float:
    """Poll (1 ms) until ``condition``; the monotonic time it first held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)
    return time.monotonic()


async def seed(db: Path, agents: int, transcript: int) -> tuple[list[str], str]:
    """``agents`` done agents and one with a ``transcript``-event log."""
    from agentdeck.core.agent import Agent, AgentSpec, AgentState
    from agentdeck.core.events import AssistantText, spawned_events
    from agentdeck.core.ids import new_agent_id
    from agentdeck.store.store import Store

    store = Store.open(db)
    ids = []
    try:
        now = time.time()
        for i in range(agents + 1):
            agent = Agent(
                id=new_agent_id(),
                name=f"agent-{i:04d}" if i < agents else "long",
                state=AgentState.DONE,
                spec=AgentSpec(prompt=f"task {i}"),
                cwd="/tmp",
                created_at=now - i,
                updated_at=now,
            )
            await store.record(spawned_events(agent), agent)
            ids.append(agent.id)
        long = ids.pop()
        batch = 5000
        for start in range(0, transcript, batch):
            await store.append(
                [
                    AssistantText(agent_id=long, ts=now, text=f"line {n}: " + "x" * 60)
                    for n in range(start, min(transcript, start + batch))
                ]
            )
    finally:
        await store.close()
    return ids, long


async def run(args: argparse.Namespace) -> None:
    import uvicorn
    from textual.widgets import DataTable

    from agentdeck.core.events import CostUpdated
    from agentdeck.daemon.deck import Deck
    from agentdeck.daemon.home import ensure_token
    from agentdeck.settings import Settings
    from agentdeck.tui.app import DeckApp
    from agentdeck.tui.client import FixedLocator
    from agentdeck.web.app import create_app
    from agentdeck.web.sse import close_streams

    header("agentdeck tui")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home")
        settings.ensure_home()
        started = time.monotonic()
        ids, long = await seed(settings.db_path, args.agents, args.transcript)
        print(
            f"seeded {args.agents:,} agents and a {args.transcript:,}-event transcript "
            f"in {time.monotonic() - started:.1f} s"
        )
        deck = await Deck.open(settings)
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

        # Per agent, the (cost, append time) of each event not yet on screen.
        sent: dict[str, list[tuple[float, float]]] = {}
        latencies: list[float] = []

        class Measured(DeckApp):
            """The app, noting when each changed row is redrawn."""

            def _flush_board(self) -> None:
                dirty = set(self._dirty)
                super()._flush_board()
                now = time.time()
                for agent_id in dirty:
                    row = self.board.rows.get(agent_id)
                    waiting = sent.get(agent_id)
                    if row is None or not waiting:
                        continue
                    # The row shows this cost: it and every earlier event are on screen.
                    shown = [at for cost, at in waiting if cost <= row.cost_usd]
                    latencies.extend(now - at for at in shown)
                    sent[agent_id] = [(c, at) for c, at in waiting if c > row.cost_usd]
                    if not sent[agent_id]:
                        del sent[agent_id]

        tui = Measured(FixedLocator(url, token))
        rss = psutil.Process()
        try:
            t0 = time.monotonic()
            async with tui.run_test(size=(120, 40)) as pilot:
                table = tui.query_one("#agents", DataTable)
                ready = await _until(
                    lambda: table.row_count >= args.agents + 1, "the table to fill"
                )
                print(f"(a) start-up to a table of {table.row_count:,} agents: "
                      f"{(ready - t0) * 1000:.0f} ms (goal <= 1000 ms)")  # fmt: skip
                await _until(lambda: str(tui.feed_state) == "live", "a live stream")

                await pilot.pause()
                total = int(args.rate * args.seconds)
                produced = appends = 0
                begin = time.monotonic()
                while produced < total:
                    due = min(total, int((time.monotonic() - begin) * args.rate) + 1)
                    if due > produced:
                        now = time.time()
                        batch = [
                            (ids[n % len(ids)], float(n + 1))  # each a new cost: a row changes
                            for n in range(produced, due)
                        ]
                        await deck.store.append(
                            [
                                CostUpdated(agent_id=agent_id, ts=now, cost_usd=cost,
                                            input_tokens=0, output_tokens=0)
                                for agent_id, cost in batch
                            ]
                        )  # fmt: skip
                        # From here the events are in the log: the clock starts.
                        committed = time.time()
                        for agent_id, cost in batch:
                            sent.setdefault(agent_id, []).append((cost, committed))
                        produced = due
                        appends += 1
                    await asyncio.sleep(0.001)
                await _until(lambda: not sent, "every event on screen", timeout=60)
                print(
                    f"(b) event -> row redrawn at {args.rate:,} events/s for {args.seconds} s: "
                    f"p50 {percentile(latencies, 50) * 1000:.0f} ms, "
                    f"p99 {percentile(latencies, 99) * 1000:.0f} ms, "
                    f"max {max(latencies) * 1000:.0f} ms over {len(latencies):,} rows "
                    f"(goal p99 <= 100 ms); {appends:,} appends in "
                    f"{time.monotonic() - begin:.1f} s"
                )

                before = rss.memory_info().rss
                t1 = time.monotonic()
                tui._select(long)
                await pilot.pause()
                done = await _until(
                    lambda: not tui._transcript_loading, "the transcript", timeout=300
                )
                after = rss.memory_info().rss
                print(
                    f"(c) a {args.transcript:,}-event transcript read in "
                    f"{done - t1:.1f} s; RSS {before / MIB:.0f} -> {after / MIB:.0f} MiB"
                )
        finally:
            close_streams(app.state)
            server.should_exit = True
            await serving
            await deck.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--transcript", type=int, default=100_000)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
