"""A hostile agent's workspace, changed under its first checkpoint (written as a pack,
``worktrees/packed_take``): a directory swapped for a symlink out of the workspace
after ``status`` named a file in it is never read through (agentdeck would store, and
a rewind write back, a file of the host's); a FIFO put in a file's place never blocks
the daemon; a file grown over the size cap is not taken."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentdeck.worktrees import checkpoints as checkpoints_module
from agentdeck.worktrees.checkpoints import Checkpoints

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b8"
CAP = 1000


@pytest.fixture
def packed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Packing from the first file on (it starts at 256)."""
    monkeypatch.setattr(checkpoints_module, "PACK_AT_LEAST", 1)


def every_object(shadow: Path) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={shadow}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip


def files_of(checkpoints: Checkpoints, commit: str) -> set[str]:
    listed = subprocess.run(
        ["git", f"--git-dir={checkpoints.shadow(AGENT)}", "ls-tree", "-r", "--name-only", commit],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return set(listed.split())


async def test_a_directory_swapped_for_a_symlink_out_is_not_read_through(
    tmp_path: Path, packed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the host's own file\n")
    ws = tmp_path / "ws"
    (ws / "dir").mkdir(parents=True)
    (ws / "dir" / "secret.txt").write_text("the agent's\n")
    (ws / "plain.txt").write_text("plain\n")
    real = checkpoints_module.measure

    def swapped(workspace: Path, paths: list[str], cap: int) -> tuple[list[str], ...]:
        found = real(workspace, paths, cap)  # status named dir/secret.txt; now the swap
        (ws / "dir" / "secret.txt").unlink()
        (ws / "dir").rmdir()
        (ws / "dir").symlink_to(outside)
        return found

    monkeypatch.setattr(checkpoints_module, "measure", swapped)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    taken = await checkpoints.snapshot(AGENT, ws)
    shadow = checkpoints.shadow(AGENT)
    assert b"the host's own file" not in every_object(shadow)
    assert files_of(checkpoints, taken.commit) == {"plain.txt"}  # the link: next time


async def test_a_fifo_or_a_grown_file_in_a_files_place_neither_blocks_nor_is_taken(
    tmp_path: Path, packed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("pipe", "grows", "stays"):
        (ws / name).write_text(f"{name}\n")
    real = checkpoints_module.measure

    def changed(workspace: Path, paths: list[str], cap: int) -> tuple[list[str], ...]:
        found = real(workspace, paths, cap)
        (ws / "pipe").unlink()
        os.mkfifo(ws / "pipe")  # nobody ever writes to it
        (ws / "grows").write_bytes(b"y" * (CAP + 5))
        return found

    monkeypatch.setattr(checkpoints_module, "measure", changed)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    taken = await checkpoints.snapshot(AGENT, ws)
    assert "grows" in taken.skipped
    assert files_of(checkpoints, taken.commit) == {"stays"}
