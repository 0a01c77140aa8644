"""An agent's first checkpoint is written as a pack (``worktrees/packed_take``): the
same tree as one file at a time through ``update-index`` would give, rewinds put it
back. A workspace the agent changes under it: tests/security/test_checkpoint_reads.py."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from agentdeck.worktrees import checkpoints as checkpoints_module
from agentdeck.worktrees import packed_take
from agentdeck.worktrees.checkpoints import Checkpoints

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b8"
CAP = 1000


def tree_of(checkpoints: Checkpoints, commit: str) -> str:
    return git(checkpoints.shadow(AGENT), "rev-parse", f"{commit}^{{tree}}")


def git(shadow: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={shadow}", *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def files_of(checkpoints: Checkpoints, commit: str) -> dict[str, str]:
    listed = git(checkpoints.shadow(AGENT), "ls-tree", "-r", commit)
    return {line.split("\t", 1)[1]: line.split()[0] for line in listed.splitlines()}


def workspace(root: Path) -> Path:
    """Files of every kind a checkpoint meets."""
    for i in range(12):
        (root / "src" / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 3}" / f"f{i}.py").write_text(f"print({i})\n" * (i + 1))
    (root / "empty").write_bytes(b"")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("src/d0/f0.py")
    (root / "dangling").symlink_to("/nowhere/at/all")
    (root / "big.bin").write_bytes(b"x" * (CAP + 1))
    (root / "sub").mkdir()
    subprocess.run(["git", "init", "-q", str(root / "sub")], check=True)
    (root / "sub" / "inner.txt").write_text("a repository of its own\n")
    (root / "tab\tname.txt").write_text("odd name\n")
    an_hour_ago = time.time() - 3600  # not racily clean: git may share their entries
    for path in root.rglob("*"):
        if ".git" not in path.parts:
            os.utime(path, (an_hour_ago, an_hour_ago), follow_symlinks=False)
    return root


async def first(tmp_path: Path, name: str, ws: Path) -> tuple[Checkpoints, str, list[str]]:
    checkpoints = Checkpoints(tmp_path / name, CAP)
    taken = await checkpoints.snapshot(AGENT, ws)
    return checkpoints, taken.commit, taken.skipped


@pytest.fixture
def packed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Packing from the first file on (it starts at 256)."""
    monkeypatch.setattr(checkpoints_module, "PACK_AT_LEAST", 1)


async def test_the_packed_first_checkpoint_is_the_tree_a_file_at_a_time_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path / "ws")
    monkeypatch.setattr(checkpoints_module, "PACK_AT_LEAST", 10**9)
    loose, loose_commit, loose_skipped = await first(tmp_path, "loose", ws)
    monkeypatch.setattr(checkpoints_module, "PACK_AT_LEAST", 1)
    spied: list[int] = []
    real = packed_take.pack_into_index

    async def spy(shadow: Path, workspace: Path, paths: list[str], cap: int) -> object:
        spied.append(len(paths))
        return await real(shadow, workspace, paths, cap)

    monkeypatch.setattr(checkpoints_module, "pack_into_index", spy)
    pack, pack_commit, pack_skipped = await first(tmp_path, "packed", ws)
    assert spied and spied[0] > 12
    assert tree_of(pack, pack_commit) == tree_of(loose, loose_commit)
    assert pack_skipped == loose_skipped == ["big.bin"]
    modes = files_of(pack, pack_commit)
    assert (modes["run.sh"], modes["link"], modes["dangling"]) == ("100755", "120000", "120000")
    assert "sub" not in modes and "sub/inner.txt" not in modes  # a repository of its own
    # The index holds the files' stat data: the next checkpoint reads nothing again;
    # and the entries are in the shared index, so the next one writes only its changes.
    shadow = pack.shadow(AGENT)
    assert git(shadow, f"--work-tree={ws}", "diff-files", "--name-only") == ""
    proper = {c: (c.shadow(AGENT) / "index").stat().st_size for c in (loose, pack)}
    assert proper[pack] <= proper[loose], proper


async def test_a_rewind_puts_back_the_packed_first_checkpoint(tmp_path: Path, packed: None) -> None:
    ws = workspace(tmp_path / "ws")
    checkpoints, _, _ = await first(tmp_path, "checkpoints", ws)
    before = {p: (ws / p).read_bytes() for p in ("src/d1/f4.py", "run.sh", "empty")}
    (ws / "src" / "d1" / "f4.py").write_text("changed\n")
    (ws / "run.sh").unlink()
    (ws / "new.txt").write_text("made since\n")
    await checkpoints.snapshot(AGENT, ws)
    done = await checkpoints.rewind(AGENT, ws, to=1)
    assert sorted(done.restored) == ["run.sh", "src/d1/f4.py"] and done.removed == ["new.txt"]
    assert {p: (ws / p).read_bytes() for p in before} == before
    assert os.access(ws / "run.sh", os.X_OK)
