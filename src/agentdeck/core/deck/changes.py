"""The Deck interface, what agents changed: worktree diffs, checkpoints and
rewinds, the merge queue."""

from __future__ import annotations

from typing import Protocol


class ChangeOps(Protocol):
    """What agents changed: worktree diffs, checkpoints and rewinds, the merge queue."""
