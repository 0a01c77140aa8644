"""The terminal UI: start-up with many agents, event-to-row latency, a long transcript.

    .venv/bin/python benchmarks/tui.py [--agents 1000] [--rate 1000] [--seconds 5]
        [--transcript 100000] [--pages 20] [--profile FILE]

The real daemon app (``create_app`` on a ``Deck``, uvicorn on 127.0.0.1, ephemeral
port) serves a fresh home seeded with ``--agents`` finished agents and one agent with
a ``--transcript``-event log, set up as ``agentdeck up -d`` leaves it (users
bootstrapped, the token proven once by its readiness check). The real ``DeckApp``
runs headless (``run_test``) in a process of its own, as in real use (``--child``: the
same file), so the TUI's loop is not shared with the daemon and the producer. The two
processes share the machine's clock: each redraw of a row is stamped with
``time.time()`` in the TUI process and matched with the append time in this one.

(a) Start-up: from the TUI process's start (its imports done) to the screen painted
    with the agent table holding every agent. Goal: <= 1 s with 1,000 agents.
(b) Latency: ``--rate`` events/s for ``--seconds`` (``CostUpdated`` for the seeded
    agents, appended through ``Store.append``); for each, the time from its append to
    its row redrawn (the clock starts once the append has committed): for a row in
    view, the screen painted after the table took the change; for a row out of view
    (most of them), the table holding the new cells (scrolled to, it shows them).
    Goal: p99 <= 100 ms at 1,000 events/s. Also the share of the delay spent before
    the event reached the TUI (the daemon's stream) and after, and the rows in view
    alone.
(c) Transcript: selecting the long-log agent; the time until its newest page is drawn,
    then ``--pages`` older pages read by scrolling up; the TUI process's RSS before,
    after opening and after paging back (the pane holds at most 1,000 entries).
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
from agentdeck.daemon.compose import open_deck


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


async def bare_reader(args: argparse.Namespace) -> None:
    """``--stream-only``: no TUI, a bare reader of the daemon's SSE stream (httpx, a
    line at a time, as the TUI's feed reads it) noting each event as it is read: the
    daemon's share of the latency alone."""
    import json

    import httpx

    out = Path(args.out).open("a")  # noqa: ASYNC230, SIM115  # open for the process's life
    headers = {"Authorization": f"Bearer {args.token}"}
    async with (
        httpx.AsyncClient(base_url=args.url, timeout=None) as http,
        http.stream("GET", "/api/events/stream", headers=headers) as response,
    ):
        out.write(f"ready 0 {args.agents + 1} 0\n")
        out.flush()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                data = event.get("data") or {}
                if "cost_usd" in data:
                    seen = f"{event['agent_id']} {data['cost_usd']!r} {time.time()!r}"
                    out.write(f"in {seen}\nrow {seen} out\n")
                    out.flush()


async def child(args: argparse.Namespace) -> None:
    """The TUI in its own process: notes in ``args.out`` when it is ready, when each
    event arrives and when each changed row is redrawn; then opens the transcript.

    A row in view is stamped when the screen is next painted (the compositor has
    drawn the table's changed lines); a row out of view, when the table has taken
    its new cells (there is nothing to paint; scrolled to, it shows them)."""
    from agentdeck.core.events import StoredEvent
    from agentdeck.tui.app import DeckApp
    from agentdeck.tui.link import FixedLocator
    from agentdeck.tui.transcript import TranscriptView

    t0 = time.monotonic()
    notes: list[str] = []
    out = Path(args.out).open("a")  # noqa: ASYNC230, SIM115  # open for the process's life

    def note(line: str) -> None:
        notes.append(line)

    def flush_notes() -> None:
        if notes:
            out.write("\n".join(notes) + "\n")
            out.flush()
            notes.clear()

    class Measured(DeckApp):
        painting: list[tuple[str, float]] = []  # rows in view, to be painted
        paints = 0

        async def _take_event(self, event: StoredEvent) -> None:
            if "cost_usd" in event.data:
                note(f"in {event.agent_id} {event.data['cost_usd']!r} {time.time()!r}")
            await super()._take_event(event)

        def _flush_board(self) -> None:
            dirty = set(self._dirty)
            super()._flush_board()
            now = time.time()
            table = self.screen_stack[0].query_one("#agents")
            top = table.scroll_offset.y
            in_view = set(table.shown[top : top + table.scrollable_content_region.height - 1])
            for agent_id in dirty:
                row = self.board.rows.get(agent_id)
                if row is None:
                    continue
                if agent_id in in_view:
                    self.painting.append((agent_id, row.cost_usd))
                else:
                    note(f"row {agent_id} {row.cost_usd!r} {now!r} out")
            flush_notes()

        def painted(self) -> None:
            self.paints += 1
            now = time.time()
            for agent_id, cost in self.painting:
                note(f"row {agent_id} {cost!r} {now!r} in")
            self.painting.clear()
            flush_notes()

    rss = psutil.Process()
    tui = Measured(FixedLocator(args.url, args.token))
    async with tui.run_test(size=(120, 40)) as pilot:
        screen = tui.screen_stack[0]
        paint = screen._compositor_refresh

        def painting() -> None:
            paint()
            tui.painted()

        screen._compositor_refresh = painting  # type: ignore[method-assign]
        table = tui.query_one("#agents")
        read = await _until(lambda: len(tui.board.rows) >= args.agents + 1, "the agents read")
        await _until(lambda: table.row_count >= args.agents + 1, "the table to fill")
        paints = tui.paints
        ready = await _until(lambda: tui.paints > paints, "the table to be painted")
        await _until(lambda: str(tui.feed_state) == "live", "a live stream")
        note(f"ready {(ready - t0) * 1000:.0f} {table.row_count} {(read - t0) * 1000:.0f}")
        flush_notes()
        go = Path(args.out + ".go")
        await _until(go.exists, "the producer to finish", timeout=600)

        view = tui.query_one("#transcript", TranscriptView)
        before = rss.memory_info().rss
        t1 = time.monotonic()
        tui._select(args.long)
        await pilot.pause()
        loader = getattr(tui, "loader", None)  # (before it, the app held the loading state)

        def loading() -> bool:
            return bool(loader.loading if loader else tui._transcript_loading)  # type: ignore[attr-defined]

        opened = await _until(lambda: not loading(), "the transcript", 300)
        await pilot.pause()
        at_open = rss.memory_info().rss
        shown = len(view.entries)
        pages = 0
        t2 = time.monotonic()
        while pages < args.pages and view.older is not None:
            view.scroll_to(y=5, animate=False, immediate=True)
            view.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            await _until(lambda: not view.fetching, "an older page")
            pages += 1
        paged = time.monotonic()
        after = rss.memory_info().rss
        note(
            f"transcript {(opened - t1) * 1000:.0f} {shown} {pages} {(paged - t2) * 1000:.0f} "
            f"{len(view.entries)} {before} {at_open} {after}"
        )
        flush_notes()


def _read_notes(path: Path) -> list[list[str]]:
    try:
        return [line.split() for line in path.read_text().splitlines() if line]
    except FileNotFoundError:
        return []


async def run(args: argparse.Namespace) -> None:
    import subprocess
    import sys

    import httpx
    import uvicorn

    from agentdeck.core.events import CostUpdated
    from agentdeck.daemon.home import ensure_token
    from agentdeck.settings import Settings
    from agentdeck.web.app import create_app
    from agentdeck.web.sse import close_streams

    header("agentdeck tui (the TUI in its own process)")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(home=Path(tmp) / "home")
        settings.ensure_home()
        started = time.monotonic()
        ids, long = await seed(settings.db_path, args.agents, args.transcript)
        print(
            f"seeded {args.agents:,} agents and a {args.transcript:,}-event transcript "
            f"in {time.monotonic() - started:.1f} s"
        )
        deck = await open_deck(settings)
        token = ensure_token(settings)
        await deck.identity.bootstrap(token)  # as `agentdeck up` does before it serves
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
        # As `agentdeck up -d` leaves the daemon: its token proven once (scrypt, then
        # remembered), by the readiness check; the TUI's start-up does not pay for it.
        async with httpx.AsyncClient(base_url=url) as http:
            ok = await http.get("/healthz", headers={"Authorization": f"Bearer {token}"})
            ok.raise_for_status()

        notes_path = Path(tmp) / "tui-notes"
        argv = [sys.executable, __file__, "--child", "--url", url, f"--token={token}",
                "--out", str(notes_path), "--agents", str(args.agents), "--long", long,
                "--pages", str(args.pages), *(["--stream-only"] if args.stream_only else []),
                *(["--profile", args.profile] if args.profile else [])]  # fmt: skip
        tui = subprocess.Popen(argv)  # noqa: ASYNC220  # returns at once
        try:
            ready = await _until(
                lambda: any(n[0] == "ready" for n in _read_notes(notes_path)), "the TUI", 120
            )
            del ready
            (line,) = [n for n in _read_notes(notes_path) if n[0] == "ready"]
            if not args.stream_only:
                print(f"(a) start-up to a table of {int(line[2]):,} agents: {line[1]} ms "
                      f"(goal <= 1000 ms); the agents were read at {line[3]} ms")  # fmt: skip

            sent: list[tuple[str, float, float]] = []  # agent, cost, append committed
            total = int(args.rate * args.seconds)
            produced = appends = 0
            begin = time.monotonic()
            while produced < total:
                due = min(total, int((time.monotonic() - begin) * args.rate) + 1)
                if due > produced:
                    now = time.time()
                    batch = [(ids[n % len(ids)], float(n + 1)) for n in range(produced, due)]
                    await deck._store.append(
                        [
                            CostUpdated(agent_id=agent_id, ts=now, cost_usd=cost,
                                        input_tokens=0, output_tokens=0)
                            for agent_id, cost in batch
                        ]
                    )  # fmt: skip
                    committed = time.time()  # the events are in the log: the clock starts
                    sent += [(agent_id, cost, committed) for agent_id, cost in batch]
                    produced = due
                    appends += 1
                await asyncio.sleep(0.001)
            elapsed = time.monotonic() - begin
            last = {agent_id: cost for agent_id, cost, _ in sent}

            def all_shown() -> bool:
                seen: dict[str, float] = {}
                for n in _read_notes(notes_path):
                    if n[0] == "row":
                        seen[n[1]] = max(seen.get(n[1], 0.0), float(n[2]))
                return all(seen.get(a, 0.0) >= c for a, c in last.items())

            await _until(all_shown, "every event on screen", timeout=120)
            rows: dict[str, list[tuple[float, float, bool]]] = {}
            arrived: dict[tuple[str, float], float] = {}
            for n in _read_notes(notes_path):
                if n[0] == "row":
                    rows.setdefault(n[1], []).append((float(n[3]), float(n[2]), n[4] == "in"))
                elif n[0] == "in":
                    arrived.setdefault((n[1], float(n[2])), float(n[3]))
            latencies, streamed, inside, painted = [], [], [], []
            for agent_id, cost, at in sent:
                drawn, seen = min((t, v) for t, shown, v in rows[agent_id] if shown >= cost)
                latencies.append(drawn - at)
                if seen:
                    painted.append(drawn - at)
                if (agent_id, cost) in arrived:
                    streamed.append(arrived[(agent_id, cost)] - at)
                    inside.append(drawn - arrived[(agent_id, cost)])
            print(
                f"(b) event -> row redrawn at {args.rate:,} events/s for {args.seconds} s: "
                f"p50 {percentile(latencies, 50) * 1000:.0f} ms, "
                f"p99 {percentile(latencies, 99) * 1000:.0f} ms, "
                f"max {max(latencies) * 1000:.0f} ms over {len(latencies):,} events "
                f"(goal p99 <= 100 ms); {appends:,} appends in {elapsed:.1f} s"
            )
            print(
                f"    of which append -> event in the TUI (the daemon's stream): "
                f"p50 {percentile(streamed, 50) * 1000:.0f} ms, "
                f"p99 {percentile(streamed, 99) * 1000:.0f} ms; event in -> row redrawn "
                f"(the TUI): p50 {percentile(inside, 50) * 1000:.0f} ms, "
                f"p99 {percentile(inside, 99) * 1000:.0f} ms"
            )
            if painted:
                print(
                    f"    the {len(painted):,} events of rows in view (to the screen painted): "
                    f"p50 {percentile(painted, 50) * 1000:.0f} ms, "
                    f"p99 {percentile(painted, 99) * 1000:.0f} ms"
                )

            if args.stream_only:
                return
            (notes_path.parent / (notes_path.name + ".go")).touch()
            await _until(
                lambda: any(n[0] == "transcript" for n in _read_notes(notes_path)),
                "the transcript", timeout=600,
            )  # fmt: skip
            (t,) = [n for n in _read_notes(notes_path) if n[0] == "transcript"]
            opened, shown, pages, paged, kept = (int(x) for x in t[1:6])
            before, at_open, after = (int(x) / MIB for x in t[6:9])
            print(
                f"(c) a {args.transcript:,}-event transcript: newest page drawn in {opened} ms "
                f"({shown} entries); {pages} older pages read by scrolling up in {paged} ms "
                f"({kept} entries kept); TUI RSS {before:.0f} -> {at_open:.0f} -> "
                f"{after:.0f} MiB"
            )
        finally:
            if args.stream_only:
                tui.terminate()
            try:  # it ends by itself once it has opened the transcript
                await asyncio.to_thread(tui.wait, 30)
            except subprocess.TimeoutExpired:
                tui.terminate()
                await asyncio.to_thread(tui.wait, 30)
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
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument(
        "--stream-only", action="store_true",
        help="a bare SSE reader instead of the TUI: the daemon's share of (b) alone",
    )  # fmt: skip
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--long", help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile", metavar="FILE", help="cProfile the TUI process into FILE (pstats)"
    )
    args = parser.parse_args()
    if args.child and args.profile:
        import cProfile

        cProfile.runctx("asyncio.run(child(args))", globals(), {"args": args}, args.profile)
        return
    if args.child:
        asyncio.run(bare_reader(args) if args.stream_only else child(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
