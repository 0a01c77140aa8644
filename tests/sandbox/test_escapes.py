"""Escapes from a ``process`` sandbox, each attempted for real and asserted on
its own: the probe runs inside bubblewrap exactly as an agent's Claude Code
process would (same plan, proxy, relay and environment)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec
from agentdeck.sandbox.confine import Confinement

from .conftest import World, needs_bwrap

pytestmark = needs_bwrap

REFUSED = [
    "write_absolute_outside",
    "write_dotdot",
    "write_tmp_trick",
    "write_through_planted_symlink",
    "hard_link_out",
    "write_git_hooks",
    "write_git_config",
    "read_ssh_key",
    "read_deck_home",
    "read_database",
    "read_other_workspace",
    "read_daemon_environ",
    "http_local_by_ip",
    "http_local_by_localhost",
    "http_local_via_proxy",
    "connect_local_via_proxy",
    "http_not_allowed_domain",
    "http_without_proxy",
    "raw_socket",
    "dns_lookup",
]
ALLOWED = [
    "write_workspace",
    "read_project",
    "http_allowed_domain",
    "model_api",
    "pytest_in_workspace",
]


async def confine(
    world: World,
    spec: SandboxSpec,
    *,
    endpoint: str | None = None,
    on_blocked: Callable[[str, int], None] = lambda *_: None,
) -> Confinement:
    return await Confinement.open(
        spec,
        workspace=world.workspace,
        settings=world.settings,
        endpoint=endpoint,
        on_blocked=on_blocked,
    )


async def probe(world: World, spec: SandboxSpec) -> tuple[dict[str, str], list[tuple[str, int]]]:
    blocked: list[tuple[str, int]] = []
    confinement = await confine(
        world,
        spec,
        endpoint=f"http://127.0.0.1:{world.model_port}",
        on_blocked=lambda host, port: blocked.append((host, port)),
    )
    try:
        process = await asyncio.create_subprocess_exec(
            *confinement.command(world.probe_argv()),
            env={**os.environ, **confinement.env()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 180)
    finally:
        await confinement.close()
    assert process.returncode == 0, err.decode()[-2000:]
    results: dict[str, str] = json.loads(out.decode().strip().splitlines()[-1])
    return results, blocked


@pytest.fixture(scope="module")
def allowlisted(world: World) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """The probe run once, in the shipped shape: process mode, an allow-list."""
    spec = SandboxSpec(
        mode=SandboxMode.PROCESS,
        required=True,
        network=NetworkMode.ALLOWLIST,
        allowed_domains=("allowed.test",),
    )
    return asyncio.run(probe(world, spec))


@pytest.mark.parametrize("case", REFUSED)
def test_escape_is_refused(case: str, allowlisted: Any, world: World) -> None:
    results, _ = allowlisted
    assert results[case].startswith("refused:"), f"{case} escaped: {results[case]}"
    assert (world.outside / "victim.txt").read_text() == "UNTOUCHED"
    for name in ("abs.txt", "dotdot.txt", "tmp-trick.txt", "via-link.txt"):
        assert not (world.outside / name).exists()


@pytest.mark.parametrize("case", ALLOWED)
def test_work_still_works(case: str, allowlisted: Any) -> None:
    results, _ = allowlisted
    assert results[case].startswith("ok:"), f"{case} failed: {results[case]}"


def test_reads_see_the_real_project_and_writes_land(allowlisted: Any, world: World) -> None:
    results, _ = allowlisted
    assert "THE PROJECT" in results["read_project"]
    assert (world.workspace / "made-inside.txt").read_text() == "escaped"
    assert "SERVED" in results["http_allowed_domain"]
    assert "1 passed" in results["pytest_in_workspace"]
    assert not (world.workspace / ".git" / "hooks" / "pre-commit").exists()


def test_refused_hosts_are_reported(allowlisted: Any, world: World) -> None:
    _, blocked = allowlisted
    assert ("not-allowed.test", world.local_port) in blocked
    assert ("127.0.0.1", world.local_port) in blocked  # the absolute-URL request
    assert all(host != "allowed.test" for host, _ in blocked)


@pytest.mark.anyio
async def test_network_off_lets_only_the_model_through(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.PROCESS, network=NetworkMode.OFF)
    results, blocked = await probe(world, spec)
    assert results["http_allowed_domain"].startswith("refused:"), results["http_allowed_domain"]
    assert results["model_api"].startswith("ok:"), results["model_api"]
    assert ("allowed.test", world.local_port) in blocked


@pytest.mark.anyio
async def test_network_open_shares_the_hosts_network(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.PROCESS, network=NetworkMode.OPEN)
    results, _ = await probe(world, spec)
    assert results["http_local_by_ip"].startswith("ok:"), results["http_local_by_ip"]
    # the files stay confined whatever the network
    assert results["write_absolute_outside"].startswith("refused:")
    assert results["read_deck_home"].startswith("refused:")


@pytest.mark.anyio
async def test_deny_read_and_allow_write_from_the_profile(world: World) -> None:
    (world.outside / "scratch").mkdir()
    spec = SandboxSpec(
        mode=SandboxMode.PROCESS,
        network=NetworkMode.OFF,
        allow_write=(".", str(world.outside / "scratch")),
        deny_read=("README.md",),
    )
    confinement = await confine(world, spec)
    script = (
        "import pathlib,sys;"
        f"pathlib.Path({str(world.outside / 'scratch' / 'ok.txt')!r}).write_text('x');"
        f"pathlib.Path({str(world.workspace / 'README.md')!r}).read_text()"
    )
    try:
        process = await asyncio.create_subprocess_exec(
            *confinement.command([sys.executable, "-c", script]),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await process.communicate()
    finally:
        await confinement.close()
    # hidden behind /dev/null, which a sandbox's mounts refuse to open
    assert "PermissionError" in err.decode()
    assert (world.outside / "scratch" / "ok.txt").read_text() == "x"
    assert (world.workspace / "README.md").read_text() == "THE PROJECT"


@pytest.mark.anyio
async def test_close_removes_the_private_directory(world: World) -> None:
    spec = SandboxSpec(mode=SandboxMode.PROCESS)
    confinement = await confine(world, spec)
    directory = confinement.directory
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    assert (directory / "run" / "proxy.sock").exists()
    await confinement.close()
    assert not Path(directory).exists()


def test_directories_a_dead_process_left_are_swept(tmp_path: Path) -> None:
    from agentdeck.sandbox import confine

    gone = subprocess.Popen(["true"])  # a pid that has exited
    gone.wait()
    stale = Path(tempfile.gettempdir()) / f"{confine.PREFIX}{gone.pid}-abc"
    mine = Path(tempfile.gettempdir()) / f"{confine.PREFIX}{os.getpid()}-abc"
    for path in (stale, mine):
        (path / "tmp").mkdir(parents=True, exist_ok=True)
    confine._swept.clear()
    try:
        confine.sweep_stale()
        assert not stale.exists() and mine.exists()
    finally:
        shutil.rmtree(mine, ignore_errors=True)


@pytest.mark.anyio
async def test_tmp_is_private_but_what_it_runs_stays_visible(world: World, tmp_path: Path) -> None:
    """``/tmp`` is the sandbox's own (no file or socket another program left
    there), yet a program that lives under it, like a checkout's venv in CI,
    still runs."""
    assert str(tmp_path).startswith(tempfile.gettempdir())
    tool = tmp_path / "bin" / "tool.sh"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\ncat {tmp_path / 'beside.txt'} || echo HIDDEN\n")
    tool.chmod(0o755)
    (tmp_path / "beside.txt").write_text("VISIBLE")
    confinement = await confine(world, SandboxSpec(mode=SandboxMode.PROCESS))
    try:
        process = await asyncio.create_subprocess_exec(
            *confinement.command([str(tool)]), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
    finally:
        await confinement.close()
    assert process.returncode == 0
    assert out.decode().strip().endswith("HIDDEN")
