"""The launcher the SDK runs for a sandboxed Claude Code: what a terminal sends
the deck's process group (Ctrl-C, a hang-up) does not reach the sandbox, which
the deck stops itself, whole, through the pid it holds."""

from __future__ import annotations

import asyncio
import os

import pytest

from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec
from agentdeck.runner import procs
from tests.support.waiting import eventually

from .conftest import World, needs_bwrap
from .test_escapes import confine

pytestmark = [needs_bwrap, pytest.mark.anyio]


async def test_the_sandbox_runs_in_a_session_of_its_own(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.PROCESS, required=True, network=NetworkMode.OPEN)
    confinement = await confine(world, spec)
    try:
        launcher = confinement.write_launcher("/bin/sleep")
        process = await asyncio.create_subprocess_exec(str(launcher), "60")
        try:

            async def sandboxed() -> list[str]:
                names = [p.name() for p in procs.process_tree(process.pid)]
                return names if "sleep" in names else []

            await eventually(sandboxed, what="the sandboxed program")
            # The pid the SDK holds is bubblewrap's, leading a session of its own.
            assert os.getsid(process.pid) == process.pid != os.getsid(0)
            assert os.getpgid(process.pid) != os.getpgid(0)
            tree = procs.process_tree(process.pid)
        finally:
            await asyncio.to_thread(procs.terminate_tree, process.pid, 5.0)
            await asyncio.wait_for(process.wait(), 10)
    finally:
        await confinement.close()
    assert procs.alive(tree) == []
