"""What a rewind does to the workspace's files directly (no git): remove the files
made since a checkpoint, with the directories they leave empty, and tell which files
a restore can write without git deleting what stands in their way."""

from __future__ import annotations

import logging
from pathlib import Path

from agentdeck.core.checkpoint import TreeChange

logger = logging.getLogger(__name__)


def inside(workspace: Path, path: Path) -> bool:
    """``path``'s directory is really in the workspace (not reached through a link)."""
    return path.parent.resolve().is_relative_to(workspace)


def remove_files(workspace: Path, paths: list[str]) -> list[str]:
    """Delete ``paths`` and the directories they leave empty, never the workspace
    itself; the paths deleted."""
    removed: list[str] = []
    for path in paths:
        target = workspace / path
        if not inside(workspace, target):
            continue
        try:
            if target.is_dir() and not target.is_symlink():
                continue  # not the file the snapshot took: something made since
            target.unlink(missing_ok=True)
        except OSError:
            logger.warning("rewind could not remove %s", target, exc_info=True)
            continue
        removed.append(path)
        parent = target.parent
        while parent != workspace and parent.is_relative_to(workspace):
            try:
                parent.rmdir()
            except OSError:
                break  # not empty
            parent = parent.parent
    return removed


def unblocked(
    workspace: Path, restore: list[TreeChange], removing: set[str]
) -> tuple[list[TreeChange], list[str]]:
    """The files a rewind can write, and those it must not: git would delete what is
    in their way, and what is in the way of a file the snapshot did not have is
    ignored or too large (an ignored file where a directory must go, an ignored
    directory where a file must go). ``removing``: paths that will be out of the way."""
    ok: list[TreeChange] = []
    blocked: list[str] = []
    for change in restore:
        target = workspace / change.path
        if change.status != "A":
            ok.append(change)  # the snapshot of now has this very file
        elif _in_the_way(workspace, change.path, removing) or not inside(workspace, target):
            blocked.append(change.path)
        else:
            ok.append(change)
    return ok, blocked


def _in_the_way(workspace: Path, path: str, removing: set[str]) -> bool:
    parts = path.split("/")
    for depth in range(1, len(parts)):
        above = "/".join(parts[:depth])
        where = workspace / above
        if above in removing:
            return False
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            return True
    target = workspace / path
    if target.is_symlink() or target.is_file():
        return True  # a file the snapshot of now did not take
    if target.is_dir():
        # A directory whose files are all being removed goes with them.
        return not any(p.startswith(path + "/") for p in removing)
    return False
