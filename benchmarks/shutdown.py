"""Stopping while agents start: a burst of creations, then ``agentdeck down``.

    .venv/bin/python benchmarks/shutdown.py [--agents 40] [--after 1.5] [--slots 8]

A daemon (``agentdeck up``, a fresh home) is sent ``--agents`` concurrent
``POST /api/agents`` (scenario ``chat``); ``--after`` seconds later ``agentdeck down``
runs, as a user would type it. Prints how long ``down`` took (spawn to exit), the
requests' answers, the agents' final states, any agent left live with a process and
any process of the home left running, and the daemon's answer time to a status
probe during the burst. Goals (issue 14): ``down`` within 2 s of being asked; no
agent ``starting``/``running`` and no process left; every creation answered (201,
or 503: the daemon is stopping). With ``--after`` past the burst, it times the
burst itself: first and last agent up (``--slots``: how many boot at once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import psutil

from _common import clean_env, header, median, percentile

AGENTDECK = [sys.executable, "-m", "agentdeck"]


async def daemon_info(home: Path, up: subprocess.Popen[bytes]) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if up.poll() is not None:
            sys.exit(f"the daemon exited ({up.returncode})")
        try:
            info: dict[str, object] = json.loads((home / "daemon.json").read_text())
            return info
        except (OSError, ValueError):
            await asyncio.sleep(0.1)
    sys.exit("the daemon did not come up within 60 s")


async def burst(
    args: argparse.Namespace, home: Path, env: dict[str, str], up: subprocess.Popen[bytes]
) -> None:
    info = await daemon_info(home, up)
    token = (home / "token").read_text().strip()
    answers: Counter[str] = Counter()
    done_at: list[float] = []
    probes: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    url = f"http://127.0.0.1:{info['port']}"
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as api:
        began = time.monotonic()

        async def create(i: int) -> None:
            try:
                r = await api.post("/api/agents", json={"prompt": f"hi {i}", "scenario": "chat"})
                answers[str(r.status_code)] += 1
                if r.status_code == 201:
                    done_at.append(time.monotonic() - began)
            except httpx.HTTPError as exc:
                answers[type(exc).__name__] += 1

        async def probe() -> None:
            while True:
                asked = time.monotonic()
                try:
                    await api.get("/api/stats")
                    probes.append(time.monotonic() - asked)
                except httpx.HTTPError:
                    return
                await asyncio.sleep(0.5)

        prober = asyncio.create_task(probe())
        creating = [asyncio.create_task(create(i)) for i in range(args.agents)]
        await asyncio.sleep(args.after)
        asked = time.monotonic()
        down = await asyncio.create_subprocess_exec(
            *AGENTDECK, "down", env=env, stdout=subprocess.DEVNULL
        )
        await down.wait()
        took = time.monotonic() - asked
        await asyncio.gather(*creating)
        prober.cancel()
    await asyncio.to_thread(up.wait, 60)
    with sqlite3.connect(home / "agentdeck.db") as db:
        rows = db.execute("select id, state, pid from agents").fetchall()
    states = Counter(state for _, state, _ in rows)
    live = [(i, s, p) for i, s, p in rows if s in ("starting", "running", "idle") or p]
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(str(home) in word for word in p.info["cmdline"] or [])
    ]
    print(f"  agents created at once       {args.agents} (then `down` {args.after:.1f} s in)")
    print(f"  `agentdeck down` took        {took:.2f} s (spawn to exit)")
    print(f"  creation answers             {dict(answers)}")
    if done_at:
        print(f"  first / last agent up        {done_at[0]:.1f} s / {max(done_at):.1f} s")
    print(f"  final states                 {dict(states)}")
    print(f"  agents left live, processes  {len(live)}, {len(left)}")
    if probes:
        print(
            f"  daemon's answer meanwhile    median {median(probes) * 1000:.0f} ms, "
            f"p90 {percentile(probes, 90) * 1000:.0f} ms, max {max(probes) * 1000:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=40)
    parser.add_argument("--after", type=float, default=1.5, help="seconds before `down`")
    parser.add_argument("--slots", type=int, default=8, help="AGENTDECK_MAX_CONCURRENT_STARTS")
    args = parser.parse_args()
    header("Stopping while agents start: a burst of creations, then `agentdeck down`")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = clean_env(
            AGENTDECK_HOME=str(home),
            AGENTDECK_CLAUDE_CONFIG_DIR=str(Path(tmp) / "claude-config"),
            AGENTDECK_PORT="0",
            AGENTDECK_MAX_LIVE_AGENTS=str(max(32, args.agents)),
            AGENTDECK_MAX_CONCURRENT_STARTS=str(args.slots),
        )
        up = subprocess.Popen([*AGENTDECK, "up"], env=env, stdout=subprocess.DEVNULL)
        try:
            asyncio.run(burst(args, home, env, up))
        finally:
            if up.poll() is None:
                up.kill()


if __name__ == "__main__":
    main()
