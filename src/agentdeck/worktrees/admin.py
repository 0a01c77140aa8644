"""A worktree's own git directory (``<git dir>/worktrees/<name>``), found and
checked without trusting what the agent could have written.

agentdeck never lets git follow a worktree's ``.git`` file: an agent that rewrote
it would have agentdeck's own git read a configuration of its choosing. Each call
names the directory itself (``--git-dir``, ``--work-tree``), after checking that
the ``.git`` file, the directory's ``commondir`` and its ``gitdir`` all still say
what git wrote when it made the worktree; a worktree that says otherwise is
refused. ``confine`` prepares what a sandbox lets the agent write there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentdeck.core.worktree import GitPlaces, Worktree, own_namespace
from agentdeck.errors import WorktreeError

_HINT = (
    "its agent may have tampered with it: look at it by hand, and remove it with "
    "`git worktree remove --force`"
)


async def at(worktree: Worktree) -> tuple[str, str]:
    """The options that run git on the worktree, its ``.git`` file unread."""
    admin = await asyncio.to_thread(admin_dir, worktree)
    return f"--git-dir={admin}", f"--work-tree={worktree.path}"


def admin_dir(worktree: Worktree) -> Path:
    """The worktree's own git directory, if everything still agrees on it; else
    ``WorktreeError``."""
    common = Path(worktree.git_dir).resolve()
    path = Path(worktree.path)
    admin = _named_by_git_file(path)
    if admin.parent != common / "worktrees":
        raise WorktreeError(
            f"the .git file of the worktree {path} was changed: it points at {admin}, "
            f"not at a worktree of {common}; agentdeck runs no git there",
            hint=_HINT,
        )
    _check(admin, common, path)
    return admin


def found(path: Path) -> tuple[Path, Path] | None:
    """For a worktree whose record is gone: its repository's git directory and its
    own, if its ``.git`` file, ``commondir`` and ``gitdir`` agree; else None."""
    try:
        admin = _named_by_git_file(path)
        common = _read_path(admin / "commondir", admin)
        if admin.parent != common / "worktrees":
            return None
        _check(admin, common, path)
    except (WorktreeError, OSError):
        return None
    return common, admin


async def confine(worktree: Worktree) -> GitPlaces:
    """What of the git directory a sandbox lets the worktree's agent write, made to
    exist first (a sandbox binds only places that exist): its branch's directory of
    refs and of reflogs (git may have packed the ref and pruned them), and the
    read-only ones, so that the agent cannot create them either."""

    def prepare() -> GitPlaces:
        admin = admin_dir(worktree)
        common = Path(worktree.git_dir)
        places = GitPlaces.of(worktree, str(admin))
        namespace = own_namespace(worktree.branch)
        if namespace is not None:
            for kind in ("refs", "logs/refs"):
                (common / kind / "heads" / namespace).mkdir(parents=True, exist_ok=True)
        for folder in ("objects/info", "objects/pack"):
            (common / folder).mkdir(parents=True, exist_ok=True)
        (admin / "config.worktree").touch(exist_ok=True)
        return places

    return await asyncio.to_thread(prepare)


def _named_by_git_file(path: Path) -> Path:
    """The directory the worktree's ``.git`` file names: a plain file, one line."""
    dot_git = path / ".git"
    try:
        if not dot_git.is_file() or dot_git.is_symlink():
            raise WorktreeError(
                f"the .git file of the worktree {path} is gone or is no longer a file; "
                "agentdeck runs no git there",
                hint=_HINT,
            )
        text = dot_git.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorktreeError(f"the .git file of the worktree {path} cannot be read: {exc}") from None
    line = text.removesuffix("\n")
    if not line.startswith("gitdir: ") or "\n" in line:
        raise WorktreeError(
            f"the .git file of the worktree {path} was changed: it does not name a git "
            "directory; agentdeck runs no git there",
            hint=_HINT,
        )
    return (path / line.removeprefix("gitdir: ")).resolve()


def _check(admin: Path, common: Path, path: Path) -> None:
    """``commondir`` leads back to the repository, ``gitdir`` to the worktree."""
    if _read_path(admin / "commondir", admin) != common:
        raise WorktreeError(
            f"the worktree {path} says its repository is elsewhere than {common} "
            f"({admin / 'commondir'} was changed); agentdeck runs no git there",
            hint=_HINT,
        )
    if _read_path(admin / "gitdir", admin) != (path / ".git").resolve():
        raise WorktreeError(
            f"the worktree {path} is not where its repository says it is "
            f"({admin / 'gitdir'} was changed); agentdeck runs no git there",
            hint=_HINT,
        )


def _read_path(file: Path, relative_to: Path) -> Path:
    try:
        text = file.read_text(encoding="utf-8").removesuffix("\n")
    except (OSError, UnicodeDecodeError):
        raise WorktreeError(f"{file} cannot be read; agentdeck runs no git there") from None
    return (relative_to / text).resolve()
