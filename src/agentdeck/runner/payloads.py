"""Full tool outputs that were too large for their event, kept on disk."""

from __future__ import annotations

import re
from pathlib import Path

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class PayloadStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def store(self, agent_id: str, key: str, text: str) -> str:
        directory = self.root / _SAFE.sub("_", agent_id)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{_SAFE.sub('_', key)}.txt"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        return str(path)
