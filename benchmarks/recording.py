"""What recording costs (issue 32.1): a 3-turn scripted run recorded vs not, and the
recording proxy's added latency to the first streamed byte.

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python benchmarks/recording.py \
        [--rounds 6] [--requests 300]

- ``run``: the real Claude Code through an in-process runner (``build_runner``, no warm
  pool, a fresh home per run) on the ``three-turns`` scenario, timed from
  ``Runner.start`` to the agent's end; ``plain`` and ``recorded`` (``AgentSpec.record``:
  the proxy, the cassette, the start state's checkpoint) alternate, the order rotating
  each round. Goal: median ratio recorded/plain at most 1.05 (the ratio of the medians,
  and the median of each round's ratio: a run's time swings by a second under load,
  with Claude Code's boot and its first Bash, whichever variant it is); and the CPU
  agentdeck spent per run (this process and the git it ran, Claude Code aside): what
  recording adds, which a loaded machine turns into time.
- ``first byte``: a streamed answer of the scripted model (``agentdeck mock-model``, a
  process of its own) asked directly and through the proxy (in this process's loop, as
  in the daemon) by a client in a process of its own (as Claude Code is; a client
  thread here would contend for the GIL with the proxy's loop), one keep-alive
  connection each, alternating; the time from sending the request to the first body
  byte. Goal: the proxy adds at most 5 ms (median).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import clean_env, header, median, percentile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentdeck.core.agent import AgentSpec, AgentState
from agentdeck.daemon.compose import build_runner
from agentdeck.runner.recording.service import Recorder
from agentdeck.settings import Settings
from agentdeck.store.store import Store

REQUEST = {
    "model": "claude-sonnet-4-5",
    "stream": True,
    "max_tokens": 100,
    # About the size of each of Claude Code's requests in a three-turns run (~57 KB).
    "system": "You are Claude Code. " * 2800,
    "messages": [{"role": "user", "content": "hello"}],
}


def _settings(base: Path) -> Settings:
    return Settings(
        home=base / "home",
        claude_config_dir=base / "claude-config",
        port=0,
        warm_pool=0,
        max_retries=1,
        stop_grace_seconds=1.0,
        connect_timeout_seconds=60.0,
    )


def _cpu() -> float:
    """Seconds of CPU of this process and the children it has waited for (the
    start state's git; not Claude Code, whose process tree the SDK reaps apart)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


CPU: dict[str, list[float]] = {"plain": [], "recorded": []}


async def one_run(record: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        settings = _settings(Path(tmp))
        settings.ensure_home()
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        try:
            cpu = _cpu()
            began = time.perf_counter()
            session = await runner.start(
                AgentSpec(prompt="say one and two", scenario="three-turns", record=record)
            )
            await session.wait_finished(timeout=120)
            took = time.perf_counter() - began
            if session.agent.state != AgentState.DONE:
                sys.exit(f"the {'recorded' if record else 'plain'} run ended {session.agent.state}")
        finally:
            await runner.shutdown()
            await store.close()
    CPU["recorded" if record else "plain"].append(_cpu() - cpu)
    return took


async def runs(rounds: int) -> None:
    times: dict[str, list[float]] = {"plain": [], "recorded": []}
    await one_run(False)  # warm the bytecode and the page cache
    for i in range(rounds):
        order = ["plain", "recorded"] if i % 2 == 0 else ["recorded", "plain"]
        for variant in order:
            times[variant].append(await one_run(variant == "recorded"))
    for variant, values in times.items():
        ms = [v * 1000 for v in values]
        cpu = median(CPU[variant][-rounds:]) * 1000
        print(
            f"  run {variant:<9} median {median(ms):7.0f} ms, p95 {percentile(ms, 95):7.0f} ms; "
            f"agentdeck's CPU median {cpu:5.0f} ms"
        )
    ratio = median(times["recorded"]) / median(times["plain"])
    paired = median([r / p for r, p in zip(times["recorded"], times["plain"], strict=True)])
    print(
        f"  run ratio recorded/plain: {ratio:.3f} of the medians, {paired:.3f} the median of "
        f"each round's (goal <= 1.05)"
    )


def _first_byte(client: httpx.Client, url: str) -> float:
    """Milliseconds from sending a streamed request to its first body byte."""
    began = time.perf_counter()
    took = 0.0
    with client.stream("POST", url, json=REQUEST) as response:
        for _ in response.iter_raw():
            if not took:
                took = time.perf_counter() - began
    return took * 1000


def _measure(direct_url: str, proxied_url: str, requests: int) -> dict[str, list[float]]:
    """In a thread of its own (a client as Claude Code is: not the proxy's loop)."""
    got: dict[str, list[float]] = {"direct": [], "proxied": []}
    urls = {"direct": direct_url, "proxied": proxied_url}
    with httpx.Client() as a, httpx.Client() as b:
        clients = {"direct": a, "proxied": b}
        for _ in range(20):  # connections up, code warm
            for name in got:
                _first_byte(clients[name], urls[name])
        for i in range(requests):
            for name in ("direct", "proxied") if i % 2 == 0 else ("proxied", "direct"):
                got[name].append(_first_byte(clients[name], urls[name]))
    return got


async def _measured_apart(direct: str, proxied: str, requests: int) -> dict[str, list[float]]:
    """``_measure`` in a process of its own, as Claude Code is: a client thread in
    this process would take the GIL from the proxy's loop at each of its sends."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--client", direct, proxied, str(requests),
        stdout=asyncio.subprocess.PIPE, env=clean_env(),
    )  # fmt: skip
    out, _ = await child.communicate()
    if child.returncode != 0:
        sys.exit(f"the first-byte client failed ({child.returncode})")
    got: dict[str, list[float]] = json.loads(out)
    return got


async def first_byte(requests: int) -> None:
    """The scripted model in a process of its own (the upstream), the proxy in this
    process's loop (as in the daemon), the client in a thread."""
    env = clean_env()
    model = subprocess.Popen(  # noqa: ASYNC220 - read in a thread below
        [sys.executable, "-m", "agentdeck", "mock-model", "--scenario", "chat"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert model.stdout is not None
        line = await asyncio.to_thread(model.stdout.readline)
        upstream = line.strip().rsplit(" ", 1)[-1] + "/s/chat"
        with tempfile.TemporaryDirectory() as tmp:
            recorder = Recorder(_settings(Path(tmp)))
            try:
                route = await recorder.open("bench", upstream, "all")
                got = await _measured_apart(
                    f"{upstream}/v1/messages", f"{route}/v1/messages", requests
                )
            finally:
                await recorder.close()
    finally:
        model.terminate()
        model.wait(10)
    for name, ms in got.items():
        print(f"  first byte {name:<8} median {median(ms):.2f} ms, p95 {percentile(ms, 95):.2f} ms")
    added = median(got["proxied"]) - median(got["direct"])
    paired = median([p - d for p, d in zip(got["proxied"], got["direct"], strict=True)])
    print(
        f"  first byte added by the proxy: {added:.2f} ms median "
        f"(paired median {paired:.2f} ms; goal <= 5 ms)"
    )


async def main(rounds: int, requests: int, only: str | None) -> None:
    logging.basicConfig(level=logging.ERROR)
    header("recording: recorded vs plain run, and the proxy's first-byte latency")
    if only != "run":
        await first_byte(requests)
    if only != "first-byte":
        await runs(rounds)
    print(f"  load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:  # the first-byte client (see _measured_apart)
        direct, proxied, count = sys.argv[2:5]
        print(json.dumps(_measure(direct, proxied, int(count))))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--only", choices=("first-byte", "run"))
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.requests, args.only))
