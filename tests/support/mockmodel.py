"""Test helpers shared across test packages: the scripted model and the real CLI.

async with running_mock("demo") as mm:
    env = cli_env(tmp_path / "home", mm.url_for("demo"))
    run = await run_claude(["-p", "tidy up"], cwd=work, env=env)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.mockmodel import MockModel, Scenario, load_scenario, write_workspace

__all__ = [
    "CliRun",
    "claude_cli_path",
    "cli_env",
    "run_claude",
    "running_mock",
    "running_mock_in_thread",
    "write_workspace",
]

ScenarioLike = Scenario | str | Path


def _scenarios(items: Sequence[ScenarioLike]) -> list[Scenario]:
    return [s if isinstance(s, Scenario) else load_scenario(s) for s in items]


@contextlib.asynccontextmanager
async def running_mock(*scenarios: ScenarioLike) -> AsyncIterator[MockModel]:
    """A started :class:`MockModel` in the current loop (names, paths or Scenario objects)."""
    mm = MockModel(_scenarios(scenarios))
    await mm.start()
    try:
        yield mm
    finally:
        await mm.stop()


@contextlib.contextmanager
def running_mock_in_thread(*scenarios: ScenarioLike) -> Iterator[MockModel]:
    """The same for synchronous tests: the server runs in its own thread and loop."""
    with MockModel(_scenarios(scenarios)).running_in_thread() as mm:
        yield mm


def claude_cli_path() -> Path | None:
    """The Claude Code binary bundled with claude-agent-sdk, or ``None`` if absent."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def cli_env(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    """Environment for one CLI run: fresh HOME, the mock endpoint, bounded retries."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="sk-fake",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        CLAUDE_CODE_MAX_RETRIES="2",
        IS_SANDBOX="1",
    )
    env.update(extra)
    return env


@dataclass
class CliRun:
    """What one CLI process printed; ``lines`` are the decoded stream-json lines."""

    returncode: int
    lines: list[dict[str, Any]]
    stderr: str
    elapsed: float
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        assert self.results, f"no result line; stderr: {self.stderr[-2000:]}"
        return self.results[-1]

    def of_type(self, kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines
            if line.get("type") == kind and (subtype is None or line.get("subtype") == subtype)
        ]

    def tool_uses(self) -> list[dict[str, Any]]:
        return [
            block
            for line in self.of_type("assistant")
            for block in line["message"]["content"]
            if block.get("type") == "tool_use"
        ]


async def run_claude(
    args: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None = None,
    timeout: float = 60.0,
) -> CliRun:
    """Run the bundled CLI with ``--output-format stream-json --verbose`` to completion."""
    cli = claude_cli_path()
    assert cli is not None, "the bundled Claude Code CLI is missing"
    loop = asyncio.get_running_loop()
    started = loop.time()
    proc = await asyncio.create_subprocess_exec(
        str(cli),
        *args,
        "--output-format",
        "stream-json",
        "--verbose",
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate(stdin)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert proc.returncode is not None
    return CliRun(
        returncode=proc.returncode,
        lines=lines,
        stderr=err.decode(errors="replace"),
        elapsed=loop.time() - started,
        results=[line for line in lines if line.get("type") == "result"],
    )
