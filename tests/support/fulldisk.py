"""A real full disk: a small tmpfs mounted for the test (root only; CI runs as
root), filled with zeros until the kernel says ENOSPC.

    with small_disk(tmp_path / "disk") as disk:
        filler = fill(disk)      # no room left
        ...
        filler.unlink()          # room again
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

CHUNK = 64 * 1024


@contextlib.contextmanager
def small_disk(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where``, unmounted at the end (lazily if a process
    still holds a file there). Skips, saying why, where mounting is not allowed."""
    if shutil.which("mount") is None:
        pytest.skip("a full disk needs mount(8), which this machine lacks")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"a full disk needs a tmpfs mount, refused here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(disk: Path, name: str = "filler") -> Path:
    """Write zeros to ``disk/name`` until there is no room left; the file."""
    path = disk / name
    chunk = bytes(CHUNK)
    with path.open("wb", buffering=0) as out:
        size = CHUNK
        while size:
            try:
                out.write(chunk[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                size //= 2  # the last blocks, down to one byte
    assert os.statvfs(disk).f_bavail == 0, "the disk still has room"
    return path
