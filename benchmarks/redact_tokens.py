"""What finding glued tokens costs the scrubber: this tree's against a git revision's.

    .venv/bin/python benchmarks/redact_tokens.py [--old REV] [--rounds 15] [--size-kib 1024]

The old ``core/redact.py`` and ``core/redact_rules.py`` (at ``--old``, default
``HEAD``: run it before committing a change, or name the commit before it) are
copied into a temporary package and imported beside this tree's. Both redact the
same ordinary text (``scrubbing.py``'s four kinds: Python sources, JSON, git history,
a file listing; ``--size-kib`` of each) and scrub the same events' data (a tool's
input, a 2 KiB and a 16 KiB output, the model's text), alternating old and new round
by round; each figure is the fastest round. Goal: ordinary text <= 1.10x the old.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from _common import REPO, header
from agentdeck.core import redact as new
from scrubbing import Texts, _sources

KIB = 1024


def _old(rev: str, tmp: Path) -> ModuleType:
    """``core.redact`` as it was at ``rev``, importable beside this tree's."""

    def show(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), "show", f"{rev}:src/agentdeck/core/{path}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip

    (tmp / "old_redact_rules.py").write_text(show("redact_rules.py"))
    source = show("redact.py").replace("agentdeck.core.redact_rules", "old_redact_rules")
    (tmp / "old_redact.py").write_text(source)
    sys.path.insert(0, str(tmp))
    spec = importlib.util.spec_from_file_location("old_redact", tmp / "old_redact.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(value: Any) -> Any:
    """A copy whose strings are new objects: ``scrub`` remembers large texts it saw."""
    if isinstance(value, str):
        return "".join([value[:1], value[1:]])
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--old", default="HEAD")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size-kib", type=int, default=1024)
    args = parser.parse_args()
    header(f"redact_tokens: glued tokens found, this tree against {args.old}")
    size = args.size_kib * KIB
    texts = {kind: text[:size] for kind, text in _sources().items()}
    sample = Texts(seed=7)
    events = [
        {"command": "cat notes.txt | head -n 40", "description": "Show the notes"},
        {"output": sample.output(2 * KIB), "is_error": False},
        {"output": sample.output(16 * KIB), "is_error": False},
        {"text": sample.prose()},
    ] * 50
    with tempfile.TemporaryDirectory() as tmp:
        old = _old(args.old, Path(tmp))
        timed: dict[tuple[str, str], list[float]] = {}
        for n in range(args.rounds):
            order = [("old", old), ("new", new)] if n % 2 == 0 else [("new", new), ("old", old)]
            for name, module in order:
                for kind, text in texts.items():
                    started = time.perf_counter()
                    module.redact(text)
                    timed.setdefault((kind, name), []).append(time.perf_counter() - started)
                batch = [_fresh(e) for e in events]
                started = time.perf_counter()
                for data in batch:
                    module.scrub_value(data)
                timed.setdefault(("events", name), []).append(time.perf_counter() - started)
    rate = KIB * 1e6 / size  # µs per KiB, per second of a whole text
    print(f"  {'text':<10} {'old µs/KiB':>11} {'new µs/KiB':>11} {'ratio':>7}")
    for kind in texts:
        o, w = min(timed[(kind, "old")]), min(timed[(kind, "new")])
        print(f"  {kind:<10} {o * rate:>11.2f} {w * rate:>11.2f} {w / o:>6.2f}x")
    o = sum(min(timed[(k, "old")]) for k in texts) / len(texts)
    w = sum(min(timed[(k, "new")]) for k in texts) / len(texts)
    print(f"  {'all four':<10} {o * rate:>11.2f} {w * rate:>11.2f} {w / o:>6.2f}x")
    o, w = (min(timed[("events", v)]) / len(events) * 1e6 for v in ("old", "new"))
    print(f"  {'per event':<10} {o:>9.1f}µs {w:>9.1f}µs {w / o:>6.2f}x   (input, outputs, prose)")
    print(f"  fastest of {args.rounds} rounds, old and new alternating")
    print("  goal: ordinary text <= 1.10x the old")


if __name__ == "__main__":
    main()
