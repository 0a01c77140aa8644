"""Full tool outputs that were too large for their event, kept on disk.

Scrubbed like the events (``core.redact``) unless ``raw`` (the setting
``raw_payloads``); either way only the owner can read them (files 0600,
directories 0700). An output that cannot be kept (a full disk) leaves no part
of itself behind and raises ``DiskFull`` (else ``StoreError``), naming the file:
the agent ends saying so, rather than its output being lost unsaid.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from agentdeck.core.redact import scrub
from agentdeck.errors import DiskFull, StoreError

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class PayloadStore:
    def __init__(self, root: Path, *, raw: bool = False) -> None:
        self.root = root
        self.raw = raw

    def _path(self, agent_id: str, key: str) -> Path:
        return self.root / _SAFE.sub("_", agent_id) / f"{_SAFE.sub('_', key)}.txt"

    def _make_directories(self, path: Path) -> None:
        for d in (self.root, path.parent):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            d.chmod(0o700)

    def store(self, agent_id: str, key: str, text: str) -> str:
        """Write ``text`` as it is (the caller scrubbed it, unless ``raw``)."""
        return self._keep(agent_id, key, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    def adopt(self, agent_id: str, key: str, source: str) -> str | None:
        """Copy the file Claude Code persisted, scrubbed unless ``raw``."""
        if not Path(source).is_file():
            return None
        if self.raw:
            return self._keep(agent_id, key, lambda tmp: shutil.copyfile(source, tmp))
        try:
            text = Path(source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return self.store(agent_id, key, scrub(text))

    def _keep(self, agent_id: str, key: str, write: Callable[[Path], object]) -> str:
        path = self._path(agent_id, key)
        tmp = path.with_suffix(".tmp")
        try:
            self._make_directories(path)
            _owner_only(tmp)
            write(tmp)
            tmp.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()  # a part of it would only take room
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(
                    f"the disk is full: a tool's full output could not be kept in {path}",
                    hint="free space on its disk",
                ) from exc
            raise StoreError(
                f"a tool's full output could not be kept in {path}: {exc.strerror or exc}"
            ) from exc
        return str(path)


def _owner_only(path: Path) -> None:
    """Create ``path`` empty, readable by its owner alone, before anything is written."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    path.chmod(0o600)
