"""Helpers shared by the benchmarks: environments, the bundled CLI, statistics, output."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def bundled_cli() -> Path:
    """The Claude Code binary bundled with claude-agent-sdk (what agentdeck runs)."""
    from agentdeck.runner.sdk_private import bundled_cli_path

    path = bundled_cli_path()
    if not path.is_file():
        sys.exit(f"the bundled Claude Code CLI is missing at {path}")
    return path


def cli_version() -> str:
    version_file = bundled_cli().parent / "claude.version"
    return version_file.read_text().strip() if version_file.is_file() else "?"


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would steer agentdeck or
    Claude Code (endpoint, credentials, config dir), plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTDECK_", "ANTHROPIC_", "CLAUDE"))
    }
    env.update(extra)
    return env


def command_line() -> str:
    """How to reproduce this run, from the repository root."""
    script = Path(sys.argv[0]).resolve()
    with_root = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    return shlex.join([".venv/bin/python", str(with_root), *sys.argv[1:]])


def machine() -> str:
    mem = psutil.virtual_memory().total / (1024**3)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.node()}: {os.cpu_count()} CPUs, {mem:.0f} GiB RAM, "
        f"Python {platform.python_version()}, Claude Code {cli_version()}, "
        f"load average {load}"
    )


def header(title: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{title}  ({now})")
    print(f"  machine: {machine()}")
    print(f"  command: {command_line()}")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def ratio_interval(
    base: Sequence[float], other: Sequence[float], *, draws: int = 4000, seed: int = 7
) -> tuple[float, float]:
    """A 95 % bootstrap interval of ``median(other) / median(base)``, the rounds
    resampled in their pairs (round i of each ran side by side in time): how far
    the ratio of medians could be from its value by the noise the rounds show."""
    import random

    pick = random.Random(seed)
    n = len(base)
    ratios = []
    for _ in range(draws):
        rows = [pick.randrange(n) for _ in range(n)]
        ratios.append(median([other[i] for i in rows]) / median([base[i] for i in rows]))
    return percentile(ratios, 2.5), percentile(ratios, 97.5)


def bytecode_cached(module: str = "sqlalchemy") -> bool:
    """Whether the venv ships compiled bytecode for ``module`` (uv does not by default)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    return any((Path(spec.origin).parent / "__pycache__").glob("*.pyc"))


@contextlib.contextmanager
def model_process(scenario: str, tmp: Path, *, name: str | None = None) -> Iterator[str]:
    """``agentdeck mock-model`` in its own process, so its clock and CPU are its
    own; yields the base URL of the scenario (a shipped name or a file, whose
    ``name`` is given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTDECK_")}
    log = tmp / "mock-model.out"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentdeck", "mock-model", "--scenario", scenario],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 30
        pattern = re.compile(rf"^\s*{re.escape(name or scenario)}: (\S+)$", re.M)
        while (found := pattern.search(log.read_text())) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mock-model did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield found.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RssSampler:
    """Peak RSS of this process (every ``interval``) and of all its descendants."""

    def __init__(self, interval: float = 0.05, children_every: int = 5) -> None:
        self.interval = interval
        self.children_every = children_every
        self.me = psutil.Process()
        self.peak_self = self.me.memory_info().rss
        self.peak_children = 0
        self.peak_children_count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        tick = 0
        while not self._stop.wait(self.interval):
            self.peak_self = max(self.peak_self, self.me.memory_info().rss)
            tick += 1
            if tick % self.children_every == 0:
                self._sample_children()

    def _sample_children(self) -> None:
        total = count = 0
        for child in self.me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
                count += 1
        if total > self.peak_children:
            self.peak_children, self.peak_children_count = total, count
