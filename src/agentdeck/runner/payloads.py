"""Full tool outputs that were too large for their event, kept on disk."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class PayloadStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, agent_id: str, key: str) -> Path:
        directory = self.root / _SAFE.sub("_", agent_id)
        directory.mkdir(parents=True, exist_ok=True)
        return directory / f"{_SAFE.sub('_', key)}.txt"

    def store(self, agent_id: str, key: str, text: str) -> str:
        path = self._path(agent_id, key)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return str(path)

    def adopt(self, agent_id: str, key: str, source: str) -> str | None:
        path = self._path(agent_id, key)
        tmp = path.with_suffix(".tmp")
        try:
            shutil.copyfile(source, tmp)
        except OSError:
            return None
        tmp.replace(path)
        return str(path)
