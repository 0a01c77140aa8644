"""Two processes appending to one database (a file, or PostgreSQL): ids never collide."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from agentdeck.store import Store
from tests.support.waiting import eventually

from .conftest import text

pytestmark = pytest.mark.anyio

APPENDS = 400

CHILD = """
import asyncio, json, sys, time
from pathlib import Path
from agentdeck.core.events import AssistantText
from agentdeck.store import Store

async def main(db: str, appends: int) -> None:
    store = Store.open(db if "://" in db else Path(db))
    ids = []
    try:
        print("ready", flush=True)
        assert sys.stdin.readline().strip() == "go"
        for i in range(appends):
            events = [AssistantText(agent_id="child", ts=time.time(), text=f"msg {i}.{k}")
                      for k in range(1 + i % 2)]
            ids += [e.id for e in await store.append(events)]
    finally:
        await store.close()
    print(json.dumps(ids), flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_two_processes_interleave_without_collisions(target: Path | str) -> None:
    store = Store.open(target)  # migrate first, so the child only opens
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(target),
        str(APPENDS),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        ready = await asyncio.wait_for(child.stdout.readline(), 30)
        assert ready.strip() == b"ready"
        parent_ids: list[int] = []

        async def write(i: int) -> None:
            nonlocal parent_ids
            parent_ids += [e.id for e in await store.append([text("parent", i)] * (1 + i % 3))]

        # The two overlap by construction, not by the scheduler's luck on a loaded
        # machine: the parent writes first, and waits mid-way for the child's first.
        await write(0)
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        for i in range(1, APPENDS):
            if i == APPENDS // 2:
                await eventually(
                    lambda: store.read(agent_id="child", limit=1), what="the child's first event"
                )
            await write(i)
        out, err = await asyncio.wait_for(child.communicate(), 60)
        assert child.returncode == 0, err.decode()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await store.close()

    child_ids: list[int] = json.loads(out.strip().splitlines()[-1])
    assert parent_ids == sorted(parent_ids) and child_ids == sorted(child_ids)
    assert not set(parent_ids) & set(child_ids)
    everything = sorted(parent_ids + child_ids)
    assert everything == list(range(1, len(everything) + 1))
    # each wrote inside the other's id range
    assert min(child_ids) < max(parent_ids) and min(parent_ids) < max(child_ids)

    async with Store.open(target) as reopened:
        log = await reopened.read(limit=10_000)
        assert [e.id for e in log] == everything
        assert [e.id for e in log if e.agent_id == "child"] == child_ids
        assert reopened.integrity_check() == "ok"
