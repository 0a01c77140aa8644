"""Runner hosts on one PostgreSQL database (issue 30 item 9): throughput with 1 vs 3
hosts, queued → running latency against a bare CLI start, and failover.

    .venv/bin/python benchmarks/cluster.py [--agents 300] [--capacity 4]
        [--hosts 1,3] [--latency-agents 10] [--bare-runs 5] [--failovers 1]
        [--heartbeat 5] [--lease 15] [--poll 1.0] [--skip-burst]

A private PostgreSQL 15 cluster (``tests/support/pgcluster``: initdb + pg_ctl in a
temporary directory, fsync off as in the tests); each phase gets a fresh database,
one API node (``agentdeck up --no-runner``) and its runner hosts (``agentdeck runner
--name hN --capacity C``), every process with its own home, all with the given
heartbeat / lease / poll settings. The scripted model: the built-in ``chat``
scenario, one-turn agents (``keep_alive`` false: each process ends with its turn).
Times are read from the events table (one machine, one clock).

- **bare**: ``agentdeck run --scenario chat`` in one process on a SQLite home, run
  ``--bare-runs`` times: the agent's ``agent_spawned`` → ``running`` (and the
  process's spawn → ``running``);
- **latency**: hosts idle, ``--latency-agents`` agents submitted through the API one
  after another (each waited for): ``agent_spawned`` (queued) → the host's
  ``claimed`` notice → ``state_changed`` ``starting`` → ``running``. Each is paired
  with one submitted just before it to one ``agentdeck up`` on a SQLite home (its
  runner in it, its warm pool: the embedded default) under the same load: its
  ``agent_spawned`` (= ``starting``) → ``running``. Goal: p50 of queued → running
  ≤ 250 ms above that daemon's start (and above ``agentdeck run``'s, printed too);
- **burst**: ``--agents`` submitted at once (20 requests in flight): agents finished
  per minute (first submission to the last one ``done``), the same latencies
  (queued → running is mostly the wait for a free slot here);
- **failover**: host h1 runs a ``resume_on_restart`` agent in a 45 s tool call; once
  its transcript is in the database, h1 is killed (SIGKILL, its Claude Code too, as
  a machine's death would) while h2 is serving: kill → ``error_occurred`` kind
  ``host_lost`` (goal ≤ lease + 2 s), → claimed by h2, → ``running`` on h2, → the
  model's first answer there (its ``assistant_text``).

Every process is stopped at the end, also on failure; the load average is printed
before and after each phase (2 shared cores).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import psutil
import sqlalchemy as sa
import yaml
from tests.support.cluster import SLOW_TURN
from tests.support.pgcluster import PgCluster, server_bin

from _common import header, median, percentile

TOKEN = "adk_cluster_bench_token_0123456789abcdef"
PROMPT = "Say hello."


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def deck_env(root: Path, **extra: str) -> dict[str, str]:
    """A home of its own under ``root`` (the file's token shared by every home)."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = home / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTDECK_", "ANTHROPIC_"))}
    env.update(
        AGENTDECK_HOME=str(home),
        AGENTDECK_CLAUDE_CONFIG_DIR=str(root / "claude-config"),
        AGENTDECK_MAX_RETRIES="1",
        AGENTDECK_STOP_GRACE_SECONDS="1",
        AGENTDECK_PORT="0",
        **extra,
    )
    return env


def deck_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentdeck", *args]


class Proc:
    """``agentdeck ARGS`` in the background, its output in a file (never a pipe
    nobody reads: a chatty process would block on it)."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.env = env
        self.log = log
        with log.open("a") as out:
            self.proc = subprocess.Popen(
                deck_argv(*args),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def check(self) -> None:
        if self.proc.poll() is not None:
            sys.exit(f"{self.proc.args} exited {self.proc.returncode}:\n{self.output()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def until(probe: Any, *, timeout: float, what: str, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(every)


@dataclass
class Deck:
    """One phase's deck: a fresh database, an API node, runner hosts."""

    base: Path
    url: str
    settings: dict[str, str]
    node: Proc | None = None
    port: int = 0
    hosts: dict[str, Proc] = field(default_factory=dict)

    def env(self, name: str) -> dict[str, str]:
        if not self.url.startswith("postgresql"):
            return deck_env(self.base / name, **self.settings)
        return deck_env(self.base / name, AGENTDECK_DATABASE_URL=self.url, **self.settings)

    async def start_node(self, *, runner: bool = False) -> None:
        env = self.env("node")
        flags = [] if runner else ["--no-runner"]
        self.node = Proc(env, self.base / "node.log", "up", *flags)
        info_file = Path(env["AGENTDECK_HOME"]) / "daemon.json"

        async def ready() -> int | None:
            assert self.node is not None
            self.node.check()
            try:
                info = json.loads(info_file.read_text())
            except (OSError, ValueError):
                return None
            return int(info["port"]) if info["pid"] == self.node.proc.pid else None

        self.port = await until(ready, timeout=120, what="the API node")

    async def start_host(self, name: str, capacity: int) -> Proc:
        host = Proc(
            self.env(name),
            self.base / f"runner-{name}.log",
            "runner",
            "--name",
            name,
            "--capacity",
            str(capacity),
        )
        self.hosts[name] = host

        async def serving() -> bool:
            host.check()
            return f"runner host {name} serving" in host.output()

        await until(serving, timeout=120, what=f"runner host {name}")
        return host

    def api(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            timeout=120,
            headers={"Authorization": f"Bearer {TOKEN}"},
        )

    def stop(self) -> None:
        for host in self.hosts.values():
            host.stop()
        if self.node is not None:
            self.node.stop()


@contextlib.contextmanager
def engine_of(url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def phases_of(engine: sa.Engine, agent_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Per agent: when it was queued, claimed, starting, running, done (event ts)."""
    rows = []
    with engine.connect() as conn:
        result = conn.execute(
            sa.text(
                "SELECT agent_id, type, ts, data FROM events WHERE type IN "
                "('agent_spawned', 'state_changed', 'notice', 'error_occurred', "
                "'assistant_text') ORDER BY id"
            )
        )
        rows = list(result)
    wanted = set(agent_ids) if agent_ids is not None else None
    out: dict[str, dict[str, float]] = {}
    for agent_id, type_, ts, data in rows:
        if wanted is not None and agent_id not in wanted:
            continue
        if isinstance(data, str):
            data = json.loads(data)
        marks = out.setdefault(agent_id, {})
        if type_ == "agent_spawned":
            key = "queued"
        elif type_ == "state_changed":
            key = str(data.get("new"))
        elif type_ in ("notice", "error_occurred"):
            key = str(data.get("kind"))
        else:
            key = "text"
        marks.setdefault(key, ts)  # the first of each
        marks[f"last_{key}"] = ts
    return out


def spans(marks: dict[str, dict[str, float]], start: str, end: str) -> list[float]:
    return [m[end] - m[start] for m in marks.values() if start in m and end in m]


def ms_row(label: str, values: list[float]) -> str:
    if not values:
        return f"  {label:<28} (none)"
    return (
        f"  {label:<28} p50 {median(values) * 1000:7.0f} ms   p99 "
        f"{percentile(values, 99) * 1000:7.0f} ms   max {max(values) * 1000:7.0f} ms  "
        f"(n={len(values)})"
    )


# -- bare ----------------------------------------------------------------------------


def bare_runs(base: Path, runs: int) -> tuple[list[float], list[float]]:
    """``agentdeck run --scenario chat`` in one process: spawned → running, and the
    process's spawn → running."""
    spawned_to_running: list[float] = []
    process_to_running: list[float] = []
    for n in range(runs):
        root = base / f"bare{n}"
        env = deck_env(root)
        began = time.time()
        done = subprocess.run(
            deck_argv("run", "--scenario", "chat", PROMPT),
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if done.returncode != 0:
            sys.exit(f"agentdeck run failed: {done.stdout}{done.stderr}")
        db = sqlite3.connect(Path(env["AGENTDECK_HOME"]) / "agentdeck.db")
        try:
            rows = db.execute(
                "SELECT type, ts, data FROM events WHERE type IN "
                "('agent_spawned', 'state_changed') ORDER BY id"
            ).fetchall()
        finally:
            db.close()
        spawned = next(ts for t, ts, _ in rows if t == "agent_spawned")
        running = next(
            ts for t, ts, d in rows if t == "state_changed" and json.loads(d)["new"] == "running"
        )
        spawned_to_running.append(running - spawned)
        process_to_running.append(running - began)
    return spawned_to_running, process_to_running


# -- latency and burst ------------------------------------------------------------------


async def submit(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    made = await client.post("/api/agents", json=body)
    if made.status_code != 201:
        raise RuntimeError(f"POST /api/agents: {made.status_code} {made.text}")
    return str(made.json()["id"])


def states(engine: sa.Engine, ids: list[str]) -> dict[str, str]:
    with engine.connect() as conn:
        query = sa.text("SELECT id, state FROM agents WHERE id IN :ids").bindparams(
            sa.bindparam("ids", expanding=True)
        )
        rows = conn.execute(query, {"ids": ids})
        return {r[0]: r[1] for r in rows}


FINAL = {"done", "error", "killed", "interrupted", "idle"}


async def all_final(engine: sa.Engine, ids: list[str], timeout: float, what: str) -> None:
    async def probe() -> bool:
        now = await asyncio.to_thread(states, engine, ids)
        return len(now) == len(ids) and all(s in FINAL for s in now.values())

    await until(probe, timeout=timeout, what=what, every=0.2)


async def one_by_one(deck: Deck, n: int) -> list[str]:
    """``n`` agents submitted one after another, each waited for."""
    body = {"prompt": PROMPT, "scenario": "chat", "keep_alive": False}
    ids: list[str] = []
    with engine_of(deck.url) as engine:
        async with deck.api() as client:
            for _ in range(n):
                ids.append(await submit(client, body))
                await all_final(engine, ids[-1:], 120, "a one-turn agent")
    return ids


async def start_daemon(base: Path, settings: dict[str, str]) -> Deck:
    """The embedded default to compare with: one ``agentdeck up`` on a SQLite home,
    its runner in it (the same Claude Code start, no queue, no lease)."""
    root = base / "sqlite"
    deck = Deck(root, f"sqlite:///{root / 'node' / 'home' / 'agentdeck.db'}", settings)
    await deck.start_node(runner=True)
    return deck


async def one_phase(
    base: Path,
    pg: PgCluster,
    settings: dict[str, str],
    daemon: Deck | None,
    *,
    hosts: int,
    capacity: int,
    agents: int,
    latency_agents: int,
    burst: bool,
) -> dict[str, Any]:
    deck = Deck(base / f"hosts{hosts}", pg.database(), settings)
    try:
        await deck.start_node()
        await asyncio.gather(*(deck.start_host(f"h{i + 1}", capacity) for i in range(hosts)))
        body = {"prompt": PROMPT, "scenario": "chat", "keep_alive": False}
        result: dict[str, Any] = {}
        # Latency: one at a time, hosts idle; each agent paired with one on the
        # SQLite daemon just before it (the same load on the machine for both).
        serial: list[str] = []
        paired: list[str] = []
        for _ in range(latency_agents):
            if daemon is not None:
                paired += await one_by_one(daemon, 1)
            serial += await one_by_one(deck, 1)
        with engine_of(deck.url) as engine:
            result["latency"] = phases_of(engine, serial)
        if daemon is not None:
            with engine_of(daemon.url) as engine:
                result["daemon"] = phases_of(engine, paired)
        if burst:
            with engine_of(deck.url) as engine:
                async with deck.api() as client:
                    print(f"    burst of {agents} on {hosts} host(s), load {load()}", flush=True)
                    gate = asyncio.Semaphore(20)

                    async def one() -> str:
                        async with gate:
                            return await submit(client, body)

                    began = time.time()
                    ids = await asyncio.gather(*(one() for _ in range(agents)))
                    submitted = time.time() - began
                    await all_final(engine, list(ids), 60 + agents * 10, "the burst")
                    marks = phases_of(engine, list(ids))
                    ended = max(m.get("done", m.get("last_error", 0.0)) for m in marks.values())
                    final = await asyncio.to_thread(states, engine, list(ids))
                    result["burst"] = {
                        "marks": marks,
                        "wall": ended - began,
                        "submitted": submitted,
                        "states": sorted(final.values()),
                    }
        return result
    finally:
        deck.stop()


# -- failover ---------------------------------------------------------------------------


async def failover(base: Path, pg: PgCluster, settings: dict[str, str], n: int) -> dict[str, float]:
    deck = Deck(base / f"failover{n}", pg.database(), settings)
    scenario = base / "slow-turn.yaml"
    scenario.write_text(yaml.safe_dump(SLOW_TURN))
    try:
        await deck.start_node()
        h1 = await deck.start_host("h1", 1)
        with engine_of(deck.url) as engine:
            async with deck.api() as client:
                agent_id = await submit(
                    client,
                    {
                        "prompt": "run the job",
                        "scenario": str(scenario),
                        "allow": ["Bash(python3:*)"],
                        "resume_on_restart": True,
                    },
                )

                async def in_its_tool() -> dict[str, Any] | None:
                    agent = (await client.get(f"/api/agents/{agent_id}")).json()
                    ok = agent.get("current_tool") == "Bash" and agent.get("session_id")
                    return agent if ok else None

                running = await until(in_its_tool, timeout=120, what="the agent in its tool")

                def kept() -> bool:
                    with engine.connect() as conn:
                        text = conn.execute(
                            sa.text("SELECT data FROM transcripts WHERE agent_id = :a"),
                            {"a": agent_id},
                        ).scalar()
                    return bool(text) and "time.sleep(45)" in str(text)

                await until(lambda: asyncio.to_thread(kept), timeout=60, what="the transcript kept")
                await deck.start_host("h2", 1)
                tree = [p for p in psutil.Process(h1.proc.pid).children(recursive=True)]
                killed = time.time()
                h1.proc.send_signal(signal.SIGKILL)
                for child in tree:  # the machine's other processes die with it
                    with contextlib.suppress(psutil.Error):
                        child.kill()
                h1.proc.wait(timeout=10)
                del running

                async def resumed() -> dict[str, float] | None:
                    marks = (await asyncio.to_thread(phases_of, engine, [agent_id]))[agent_id]
                    if "host_lost" not in marks:
                        return None
                    after = {k: v for k, v in marks.items() if k.startswith("last_") and v > killed}
                    return marks if {"last_running", "last_text"} <= after.keys() else None

                marks = await until(resumed, timeout=180, what="the agent resumed on h2")
                agent = (await client.get(f"/api/agents/{agent_id}")).json()
        return {
            "lost": marks["host_lost"] - killed,
            "claimed": marks["last_claimed"] - killed,
            "running": marks["last_running"] - killed,
            "answer": marks["last_text"] - killed,
            "host": agent["extra"].get("host"),
        }
    finally:
        deck.stop()


# -- main ---------------------------------------------------------------------------------


def report_marks(marks: dict[str, dict[str, float]]) -> dict[str, list[float]]:
    rows = {
        "queued -> claimed": spans(marks, "queued", "claimed"),
        "claimed -> starting": spans(marks, "claimed", "starting"),
        "starting -> running": spans(marks, "starting", "running"),
        "  starting -> sandbox ready": spans(marks, "starting", "sandbox"),
        "  sandbox ready -> running": spans(marks, "sandbox", "running"),
        "queued -> running": spans(marks, "queued", "running"),
        "running -> done": spans(marks, "running", "done"),
    }
    for label, values in rows.items():
        if values:
            print(ms_row(label, values))
    return rows


async def run(args: argparse.Namespace, pg: PgCluster, base: Path) -> None:
    settings = {
        "AGENTDECK_RUNNER_HEARTBEAT_SECONDS": str(args.heartbeat),
        "AGENTDECK_RUNNER_LEASE_SECONDS": str(args.lease),
        "AGENTDECK_RUNNER_POLL_SECONDS": str(args.poll),
    }
    if args.warm_pool is not None:
        settings["AGENTDECK_WARM_POOL"] = str(args.warm_pool)
    print(
        f"  heartbeat {args.heartbeat:g} s, lease {args.lease:g} s, poll {args.poll:g} s; "
        f"capacity {args.capacity} per host; warm pool "
        f"{'the default (1)' if args.warm_pool is None else args.warm_pool}"
    )
    bare_p50 = None
    if args.bare_runs:
        print(f"\nbare `agentdeck run --scenario chat` x{args.bare_runs} (load {load()})")
        s2r, p2r = await asyncio.to_thread(bare_runs, base, args.bare_runs)
        print(ms_row("spawned -> running", s2r))
        print(ms_row("process spawn -> running", p2r))
        bare_p50 = median(p2r)
    daemon = await start_daemon(base, settings) if args.latency_agents else None
    try:
        await phases(args, pg, base, settings, daemon, bare_p50)
    finally:
        if daemon is not None:
            daemon.stop()
    for n in range(args.failovers):
        print(f"\nfailover {n + 1}: kill -9 of the host running a resumed agent (load {load()})")
        figures = await failover(base, pg, settings, n)
        goal = args.lease + 2
        print(
            f"  kill -> host_lost {figures['lost']:.2f} s (goal <= {goal:g} s), -> claimed by "
            f"{figures['host']} {figures['claimed']:.2f} s, -> running {figures['running']:.2f} s,"
            f" -> the model's first answer {figures['answer']:.2f} s"
        )
    print(f"\nload average after: {load()}")


async def phases(
    args: argparse.Namespace,
    pg: PgCluster,
    base: Path,
    settings: dict[str, str],
    daemon: Deck | None,
    bare_p50: float | None,
) -> None:
    for hosts in [int(h) for h in args.hosts.split(",") if h]:
        print(f"\n{hosts} runner host(s), capacity {args.capacity} each (load {load()})")
        result = await one_phase(
            base,
            pg,
            settings,
            daemon,
            hosts=hosts,
            capacity=args.capacity,
            agents=args.agents,
            latency_agents=args.latency_agents,
            burst=not args.skip_burst,
        )
        if args.latency_agents:
            print(f"  latency, {args.latency_agents} agents one at a time, hosts idle:")
            rows = report_marks(result["latency"])
            print("  the same, each paired with one on the SQLite daemon just before it:")
            daemon_p50 = median(report_marks(result["daemon"])["queued -> running"])
            p50 = median(rows["queued -> running"])
            print(
                f"  queued -> running p50 {p50 * 1000:.0f} ms: {(p50 - daemon_p50) * 1000:+.0f} ms "
                "against the SQLite daemon's spawned -> running (goal <= +250 ms)"
            )
            if bare_p50 is not None:
                print(
                    f"  ... {(p50 - bare_p50) * 1000:+.0f} ms against `agentdeck run`'s process "
                    "spawn -> running"
                )
        if "burst" in result:
            burst = result["burst"]
            n = len(burst["marks"])
            per_minute = n / burst["wall"] * 60
            counts = {s: burst["states"].count(s) for s in set(burst["states"])}
            print(
                f"  burst: {n} agents submitted in {burst['submitted']:.1f} s, all final in "
                f"{burst['wall']:.1f} s: {per_minute:.0f} agents/min; states {counts} "
                f"(load {load()})"
            )
            report_marks(burst["marks"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=300)
    parser.add_argument("--capacity", type=int, default=4)
    parser.add_argument("--hosts", default="1,3", help="host counts, comma-separated")
    parser.add_argument("--latency-agents", type=int, default=10)
    parser.add_argument("--bare-runs", type=int, default=5)
    parser.add_argument("--failovers", type=int, default=1)
    parser.add_argument("--heartbeat", type=float, default=5.0)
    parser.add_argument("--lease", type=float, default=15.0)
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--skip-burst", action="store_true")
    parser.add_argument(
        "--warm-pool", type=int, default=None, help="AGENTDECK_WARM_POOL of each host (default 1)"
    )
    args = parser.parse_args()
    bindir = server_bin()
    if bindir is None:
        sys.exit("no PostgreSQL server binaries (apt-get install postgresql)")
    header("cluster: runner hosts on one PostgreSQL")
    base = Path(tempfile.mkdtemp(prefix="agentdeck-cluster-bench-"))
    base.chmod(0o755)  # PostgreSQL runs as its own user under it
    pg = PgCluster(base / "pg", bindir)
    try:
        pg.start()
        asyncio.run(run(args, pg, base))
    finally:
        pg.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
