"""A git worktree per agent: made from a repository, committed at each turn's end,
diffed against where it started. Runs ``git``; ``core.worktree`` is the pure half."""

from agentdeck.worktrees.manager import (
    Diff,
    Standing,
    Worktrees,
    found_on_disk,
    remove,
    standing,
    worktree_of,
)

__all__ = [
    "Diff", "Standing", "Worktrees", "found_on_disk", "remove", "standing", "worktree_of",
]  # fmt: skip
