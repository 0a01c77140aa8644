"""Full tool outputs that were too large for their event, kept on disk.

Scrubbed like the events (``core.redact``) unless ``raw`` (the setting
``raw_payloads``); either way only the owner can read them (files 0600,
directories 0700).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from agentdeck.core.redact import scrub

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class PayloadStore:
    def __init__(self, root: Path, *, raw: bool = False) -> None:
        self.root = root
        self.raw = raw

    def _path(self, agent_id: str, key: str) -> Path:
        directory = self.root / _SAFE.sub("_", agent_id)
        for d in (self.root, directory):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            d.chmod(0o700)
        return directory / f"{_SAFE.sub('_', key)}.txt"

    def store(self, agent_id: str, key: str, text: str) -> str:
        """Write ``text`` as it is (the caller scrubbed it, unless ``raw``)."""
        path = self._path(agent_id, key)
        tmp = path.with_suffix(".tmp")
        _owner_only(tmp)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return str(path)

    def adopt(self, agent_id: str, key: str, source: str) -> str | None:
        """Copy the file Claude Code persisted, scrubbed unless ``raw``."""
        try:
            if self.raw:
                path = self._path(agent_id, key)
                tmp = path.with_suffix(".tmp")
                _owner_only(tmp)
                shutil.copyfile(source, tmp)
                tmp.replace(path)
                return str(path)
            text = Path(source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return self.store(agent_id, key, scrub(text))


def _owner_only(path: Path) -> None:
    """Create ``path`` empty, readable by its owner alone, before anything is written."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    path.chmod(0o600)
