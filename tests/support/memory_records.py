"""A small, known memory for the tests of memory's surfaces (CLI, API, pages, MCP):
two projects, a failing flaky test and its fix, written through ``MemoryStore``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from agentdeck.core.memory import Observation, SessionSummary
from agentdeck.settings import Settings
from agentdeck.store.memory import MemoryStore
from agentdeck.store.store import Store

HOUR = 3600.0


@dataclass(frozen=True)
class Seeded:
    project_a: Path
    project_b: Path
    flaky: Observation  # project a, session "sess-a": the failing run
    calc: Observation  # project b, session "sess-b"
    fixed: SessionSummary  # project a, session "sess-a": the summary


def records(root: Path) -> Seeded:
    project_a, project_b = root / "proj-a", root / "proj-b"
    for d in (project_a, project_b):
        d.mkdir(parents=True, exist_ok=True)
    now = time.time()
    flaky = Observation(
        id="ob0000000000a1",
        project=str(project_a),
        session_id="sess-a",
        agent_id=None,
        ts=now - 2 * HOUR,
        tool="Bash",
        input_summary="Bash(pytest -x tests/test_retry.py)",
        output_excerpt="FAILED tests/test_retry.py::test_backoff - flaky timeout after 0.1s",
        files=("tests/test_retry.py",),
        is_error=True,
    )
    calc = Observation(
        id="ob0000000000b1",
        project=str(project_b),
        session_id="sess-b",
        agent_id="a0agent",
        ts=now - 3 * 24 * HOUR,
        tool="Read",
        input_summary="Read(calc.py)",
        output_excerpt="def add(a, b):\n    return a - b  # the bug",
        files=("calc.py",),
    )
    fixed = SessionSummary(
        id="su0000000000a1",
        project=str(project_a),
        session_id="sess-a",
        agent_id=None,
        ts=now - HOUR,
        files_changed=("tests/test_retry.py",),
        commands=("pytest -x tests/test_retry.py",),
        errors=("flaky timeout after 0.1s",),
        final_message="Raised the backoff timeout; the flaky test passes ten times in a row.",
        request="fix the flaky retry test",
    )
    return Seeded(project_a, project_b, flaky, calc, fixed)


async def write(memory: MemoryStore, seeded: Seeded) -> None:
    await memory.add_observation(seeded.flaky)
    await memory.add_observation(seeded.calc)
    await memory.save_summary(seeded.fixed)


async def seed_home(settings: Settings, root: Path) -> Seeded:
    """Write the records into ``settings``' home database and close it again."""
    seeded = records(root)
    settings.ensure_home()
    store = Store.open(settings.db_path)
    try:
        await write(MemoryStore(store), seeded)
    finally:
        await store.close()
    return seeded
