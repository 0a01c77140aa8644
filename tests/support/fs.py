"""A directory nobody can write to — root included (CI runs as root)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def unwritable(directory: Path) -> Iterator[Path]:
    """Make ``directory`` unwritable for the duration: ``chattr +i`` as root
    (permission bits do not stop root), ``chmod 500`` otherwise."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
        try:
            yield directory
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
    else:
        directory.chmod(0o500)
        try:
            yield directory
        finally:
            directory.chmod(0o700)
