"""What scrubbing secrets out of the event log costs: ingest and SSE delivery.

    .venv/bin/python benchmarks/scrubbing.py [--rounds 5] [--turns 200] [--big 8]
        [--calls 10] [--runs 4] [--skip-agent] [--skip-fan-out]
        [--subscribers 100] [--procs 4] [--rate 1000] [--seconds 10]

(a) Store ingest: ``store_ingest.py``'s small events (50 tasks, 1 and 20 per
    append), scrubbed and not.
(b) Ingest through the runner's own path: the SDK's message objects as Claude
    Code's stream gives them go through ``MessageMapper.map`` (in a worker thread
    when it scrubs a large output, as ``AgentSession`` does) and
    ``Store.record`` (which scrubs, in a worker thread past 64 KiB), one message
    after the other as one agent's session does, into a fresh SQLite file.
    Tool outputs are real text from this machine: Python sources, JSON, git
    history, a file listing, with a line from the redaction corpus now and then.
    Three streams: a session (per turn: the model's text, a tool call, an output
    of 100 B to 32 KiB, log-uniform), 32 KiB outputs, 1 MiB outputs (cut to the
    event's 32 KiB, the whole kept as a payload). Scrubbed and not scrubbed
    alternate, round by round, in this process; "not scrubbed" replaces the
    scrubbing functions (the store's, the mapper's) with ones that return their
    input, the seam the benchmark patches. Goal: scrubbed <= 1.15x not.
(c) An agent on the real Claude Code CLI (in-process runner, scripted model)
    whose Bash calls print realistic text: ``--calls`` outputs of 32 KiB, then of 1
    MiB; the run's wall time, start to finished, scrubbed and not, alternating.
    What a user waits for: Claude Code works on in its own process meanwhile.
(d) SSE fan-out (``events.py``'s measurement) with the store's scrubbing replaced
    and not: p99 delivery must not change.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import REPO, header, median
from agentdeck.daemon.compose import build_runner

KIB = 1024
MIB = 1024 * 1024
LIMIT = 32 * KIB


# -- realistic text ------------------------------------------------------------------


def _sources() -> dict[str, str]:
    """Real text of four kinds, each at least 2 MiB (repeated if need be)."""
    import agentdeck

    site = Path(json.__file__).parent
    python = "\n".join(p.read_text(errors="replace") for p in sorted(site.glob("*.py")))
    pkg = Path(agentdeck.__file__).parent
    python += "\n".join(p.read_text() for p in sorted(pkg.rglob("*.py")))
    lock = (REPO / "uv.lock").read_text()
    data = json.dumps({"packages": [line for line in lock.splitlines() if line.strip()]}, indent=2)
    log = subprocess.run(
        ["git", "-C", str(REPO), "log", "--stat", "-n", "2000"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    listing = subprocess.run(
        ["find", "/usr/lib/python3", "/usr/share/doc"], capture_output=True, text=True
    ).stdout
    out = {"python": python, "json": data, "git-log": log, "listing": listing}
    return {k: (v * (2 * MIB // max(1, len(v)) + 1))[: 2 * MIB] for k, v in out.items()}


def _corpus_lines() -> list[str]:
    corpus = json.loads((REPO / "tests/core/data/secrets_corpus.json").read_text())
    return [case["text"] for case in corpus["positive"] if "BEGIN" not in case["text"]]


class Texts:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sources = list(_sources().values())
        self.secrets = _corpus_lines()

    def output(self, size: int) -> str:
        """``size`` characters of one source from a random line, a secret per ~16 KiB."""
        source = self.rng.choice(self.sources)
        start = source.find("\n", self.rng.randrange(0, len(source) - size - 1)) + 1
        text = source[start : start + size]
        for _ in range(max(1, size // (16 * KIB)) if self.rng.random() < 0.3 else 0):
            at = text.find("\n", self.rng.randrange(0, max(1, len(text) - 1))) + 1
            text = text[:at] + self.rng.choice(self.secrets) + "\n" + text[at:]
        return text[:size]

    def prose(self) -> str:
        words = self.output(400).split()
        return " ".join(words[:60]) or "Done."


def _stream(kind: str, turns: int, big: int, seed: int) -> list[Any]:
    """The SDK messages of one stream."""
    from claude_agent_sdk import (
        AssistantMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )

    texts = Texts(seed)
    messages: list[Any] = []
    count = turns if kind == "session" else big
    for i in range(count):
        if kind == "session":
            size = int(math.exp(texts.rng.uniform(math.log(100), math.log(LIMIT))))
        else:
            size = LIMIT if kind == "32 KiB" else MIB
        use = ToolUseBlock(id=f"t{i}", name="Bash", input={"command": "cat notes.txt | head"})
        messages.append(AssistantMessage(content=[TextBlock(texts.prose()), use], model="claude"))
        result = ToolResultBlock(tool_use_id=f"t{i}", content=texts.output(size))
        messages.append(UserMessage(content=[result]))
    return messages


# -- the switch ----------------------------------------------------------------------


@contextlib.contextmanager
def unscrubbed() -> Iterator[None]:
    """The store's and the mapper's scrubbing replaced with the identity."""
    from agentdeck.core.event_scrub import cut_utf8
    from agentdeck.runner import mapping
    from agentdeck.store import store

    async def as_given(events: Any) -> Any:
        return list(events)

    saved = store._scrubbed, mapping.scrub, mapping.scrubbed_head
    store._scrubbed = as_given  # type: ignore[assignment]
    mapping.scrub = lambda text: text  # type: ignore[assignment]
    mapping.scrubbed_head = cut_utf8  # type: ignore[assignment]
    try:
        yield
    finally:
        store._scrubbed, mapping.scrub, mapping.scrubbed_head = saved  # type: ignore[assignment]


def _scrubbing(on: bool) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext() if on else unscrubbed()


# -- (a) ingest ----------------------------------------------------------------------


def store_ingest(args: argparse.Namespace) -> None:
    """``store_ingest.py``'s measurement (small events from 50 tasks), both ways."""
    from store_ingest import _ingest as ingest_small

    rates: dict[tuple[int, bool], list[float]] = {}
    for n in range(args.rounds):
        for scrub in (n % 2 == 0, n % 2 == 1):
            for chunk in (1, 20):
                with tempfile.TemporaryDirectory() as tmp, _scrubbing(scrub):
                    rate = asyncio.run(
                        ingest_small(
                            Path(tmp) / "small.db", total=args.small_events, tasks=50,
                            chunk=chunk, batch_size=500,
                        )
                    )  # fmt: skip
                rates.setdefault((chunk, scrub), []).append(rate)
    print(f"(a) store ingest, {args.small_events:,} small events from 50 tasks (median):")
    for chunk in (1, 20):
        plain, clean = median(rates[(chunk, False)]), median(rates[(chunk, True)])
        print(
            f"    {chunk:>2} per append: not scrubbed {plain:>8,.0f}/s, scrubbed "
            f"{clean:>8,.0f}/s, cost {plain / clean:.2f}x"
        )


async def _ingest(messages: list[Any], tmp: Path) -> float:
    import anyio.to_thread

    from agentdeck.runner.mapping import MessageMapper, is_heavy
    from agentdeck.runner.payloads import PayloadStore
    from agentdeck.store import Store

    store = Store.open(tmp / "bench.db")
    mapper = MessageMapper("bench", PayloadStore(tmp / "payloads"), output_limit=LIMIT)
    try:
        started = time.perf_counter()
        for message in messages:
            if is_heavy(message, LIMIT):
                mapped = await anyio.to_thread.run_sync(mapper.map, message)
            else:
                mapped = mapper.map(message)
            await store.record(mapped.events)
        return time.perf_counter() - started
    finally:
        await store.close()


def ingest(args: argparse.Namespace) -> None:
    streams = {
        "session": _stream("session", args.turns, args.big, seed=1),
        "32 KiB": _stream("32 KiB", args.turns, args.big * 8, seed=2),
        "1 MiB": _stream("1 MiB", args.turns, args.big, seed=3),
    }
    times: dict[tuple[str, bool], list[float]] = {}
    for n in range(args.rounds):
        for name, messages in streams.items():
            for scrub in (n % 2 == 0, n % 2 == 1):  # alternate which goes first
                with tempfile.TemporaryDirectory() as tmp, _scrubbing(scrub):
                    took = asyncio.run(_ingest(messages, Path(tmp)))
                times.setdefault((name, scrub), []).append(took)
    print(f"(b) ingest through MessageMapper + Store.record, {args.rounds} rounds (median):")
    print(f"    {'stream':<10} {'outputs':>8} {'not scrubbed':>14} {'scrubbed':>12} {'ratio':>7}")
    for name, messages in streams.items():
        outputs = len(messages) // 2
        plain, clean = median(times[(name, False)]), median(times[(name, True)])
        print(
            f"    {name:<10} {outputs:>8} {plain / outputs * 1000:>11.2f} ms "
            f"{clean / outputs * 1000:>9.2f} ms {clean / plain:>6.2f}x   (per output)"
        )
    print("    goal: scrubbed <= 1.15x not scrubbed")


# -- (c) a real agent -----------------------------------------------------------------


def _agent_run(tmp: Path, size: int, calls: int, seed: int) -> float:
    import yaml

    from agentdeck.core.agent import AgentSpec, AgentState
    from agentdeck.settings import Settings
    from agentdeck.store import Store

    texts = Texts(seed)
    files = {f"out{i}.txt": texts.output(size) for i in range(calls)}
    turns: list[dict[str, Any]] = [
        {"reply": [{"tool_use": {"name": "Bash", "input": {"command": f"cat {name}"}}}]}
        for name in files
    ]
    turns.append({"reply": [{"text": "done"}]})
    scenario = tmp / "scenario.yaml"
    scenario.write_text(
        yaml.safe_dump({"name": "outputs", "workspace": {"files": files}, "turns": turns})
    )
    settings = Settings(home=tmp / "home", claude_config_dir=tmp / "claude-config")

    async def go() -> float:
        settings.ensure_home()
        store = Store.open(settings.db_path)
        runner = build_runner(store, settings)
        try:
            spec = AgentSpec(prompt="go", scenario=str(scenario), allow=("Bash(cat:*)",))
            started = time.perf_counter()
            session = await runner.start(spec)
            await session.wait_finished(timeout=600)
            took = time.perf_counter() - started
            if session.agent.state != AgentState.DONE:
                raise SystemExit(f"the agent ended {session.agent.state}")
            return took
        finally:
            await runner.shutdown()
            await store.close()

    return asyncio.run(go())


def agent(args: argparse.Namespace) -> None:
    print(f"(c) an agent on the real CLI, {args.calls} Bash outputs per run, {args.runs} runs:")
    print(f"    {'outputs':<10} {'not scrubbed':>14} {'scrubbed':>12} {'ratio':>7}")
    for label, size in (("32 KiB", LIMIT), ("1 MiB", MIB)):
        times: dict[bool, list[float]] = {False: [], True: []}
        for n in range(args.runs):
            for scrub in (n % 2 == 0, n % 2 == 1):
                with tempfile.TemporaryDirectory() as tmp, _scrubbing(scrub):
                    times[scrub].append(_agent_run(Path(tmp), size, args.calls, seed=n))
        plain, clean = median(times[False]), median(times[True])
        print(
            f"    {label:<10} {plain * 1000:>11.0f} ms {clean * 1000:>9.0f} ms "
            f"{clean / plain:>6.2f}x   (the whole run)"
        )


# -- (d) SSE p99 ---------------------------------------------------------------------


def fan_out(args: argparse.Namespace) -> None:
    from events import fan_out as run_fan_out

    for scrub in (False, True, False, True):
        print(f"(d) SSE fan-out, store scrubbing {'on' if scrub else 'off'}:")
        with _scrubbing(scrub):
            asyncio.run(run_fan_out(args))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--big", type=int, default=8)
    parser.add_argument("--small-events", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--skip-agent", action="store_true")
    parser.add_argument("--skip-fan-out", action="store_true")
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    header("scrubbing: the event log's secrets, what they cost")
    store_ingest(args)
    ingest(args)
    if not args.skip_agent:
        agent(args)
    if not args.skip_fan_out:
        fan_out(args)


if __name__ == "__main__":
    main()
