"""Full tool outputs that were too large for their event, kept on disk.

Scrubbed like the events (``core.redact``) unless ``raw`` (the setting
``raw_payloads``); either way only the owner can read them (files 0600,
directories 0700). An output that cannot be kept (a full disk) leaves no part
of itself behind and raises ``DiskFull`` (else ``StoreError``), naming the file:
the agent ends saying so, rather than its output being lost unsaid.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from agentdeck.core.redact import scrub
from agentdeck.errors import DiskFull, StoreError
from agentdeck.files import atomic_write

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
        return self._keep(agent_id, key, text.encode("utf-8"))

    def adopt(self, agent_id: str, key: str, source: str) -> str | None:
        """Copy the file Claude Code persisted, scrubbed unless ``raw``."""
        if not Path(source).is_file():
            return None
        if self.raw:
            try:
                data = Path(source).read_bytes()
            except OSError:
                return None
            return self._keep(agent_id, key, data)
        try:
            text = Path(source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return self.store(agent_id, key, scrub(text))

    def _keep(self, agent_id: str, key: str, data: bytes) -> str:
        path = self._path(agent_id, key)
        try:
            self._make_directories(path)
            atomic_write(path, data, mode=0o600)  # a part of it is never left to take room
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(
                    f"the disk is full: a tool's full output could not be kept in {path}",
                    hint="free space on its disk",
                ) from exc
            raise StoreError(
                f"a tool's full output could not be kept in {path}: {exc.strerror or exc}"
            ) from exc
        return str(path)
