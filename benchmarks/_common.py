"""Helpers shared by the benchmarks: environments, the bundled CLI, statistics, output."""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def bundled_cli() -> Path:
    """The Claude Code binary bundled with claude-agent-sdk (what agentdeck runs)."""
    from agentdeck.runner.options import bundled_cli_path

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


def bytecode_cached(module: str = "sqlalchemy") -> bool:
    """Whether the venv ships compiled bytecode for ``module`` (uv does not by default)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    return any((Path(spec.origin).parent / "__pycache__").glob("*.pyc"))
