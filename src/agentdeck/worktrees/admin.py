"""A worktree's own git directory (``<git dir>/worktrees/<name>``), found and
checked without trusting what the agent could have written.

agentdeck never lets git follow a worktree's ``.git`` file: an agent that rewrote
it would have agentdeck's own git read a configuration of its choosing. Each call
names the directory itself (``--git-dir``, ``--work-tree``), after checking that
the ``.git`` file, the directory's ``commondir`` and its ``gitdir`` all still say
what git wrote when it made the worktree (or, for ``commondir``, what agentdeck
wrote: ``OWN_COMMON``); a worktree that says otherwise is refused. agentdeck's
git names the repository's git directory itself too (``GIT_COMMON_DIR``): it
reads the repository's objects first, the agent's own after them.

``confine`` prepares what a sandbox lets the agent write there: its own object
directory (the repository's store its alternate), and a directory standing for
the repository's git directory to whoever follows the ``.git`` file, linking to
all of it but ``objects``. The agent's commits land in its own objects, which
``objects.take_in`` brings into the repository's store, verified.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdeck.core.worktree import (
    OWN_COMMON,
    OWN_OBJECTS,
    OWN_OBJECTS_READ_ONLY,
    GitPlaces,
    Worktree,
    own_namespace,
)
from agentdeck.errors import WorktreeError
from agentdeck.files import atomic_write
from agentdeck.worktrees.git import git

_HINT = (
    "its agent may have tampered with it: look at it by hand, and remove it with "
    "`git worktree remove --force`"
)


# What of a repository's git directory a worktree shares (git's own list), linked
# from the worktree's OWN_COMMON whether it exists yet or not; "objects" is not.
COMMON = (
    "config", "HEAD", "refs", "logs", "packed-refs", "info", "hooks", "worktrees", "shallow",
    "modules", "branches", "remotes", "rr-cache", "svn", "description", "lost-found", "common",
)  # fmt: skip


@dataclass(frozen=True)
class View:
    """How agentdeck's git runs on a worktree: the options (``args``) and the
    environment (``env``) naming its directories."""

    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


async def at(worktree: Worktree) -> View:
    """git on the worktree, its ``.git`` file and ``commondir`` unread."""
    admin = await asyncio.to_thread(admin_dir, worktree)
    return view(admin, Path(worktree.git_dir).resolve(), worktree.path)


async def git_in(where: View, *args: str, **options: Any) -> str:
    """``git`` on a worktree as ``at`` names it."""
    return await git(*where.args, *args, env=where.env, **options)


def view(admin: Path, common: Path, path: str | Path | None = None) -> View:
    """The repository's objects only: what the agent wrote in its own object
    directory is read by agentdeck once taken in (``objects.take_in``: copied out
    without following a link, every object checked against its name), never
    where it lies (a link there could name a file the agent cannot read)."""
    args = (f"--git-dir={admin}", *([f"--work-tree={path}"] if path is not None else []))
    return View(args, {"GIT_COMMON_DIR": str(common)})


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
        common = admin.parent.parent
        if admin.parent.name != "worktrees":
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
        (admin / "config.worktree").touch(exist_ok=True)
        own_objects(admin, common.resolve())
        return places

    return await asyncio.to_thread(prepare)


def own_objects(admin: Path, common: Path) -> None:
    """The agent's object directory, with the repository's as its alternate, and
    ``OWN_COMMON``: links to each part of the repository's git directory but its
    objects, which are the agent's; the worktree's ``commondir`` names it. Made
    again as needed at each start (what the repository gained since is linked)."""
    objects = admin / OWN_OBJECTS
    for name in OWN_OBJECTS_READ_ONLY:
        (objects / name).mkdir(parents=True, exist_ok=True)
    _replace(objects / "info" / "alternates", f"{common / 'objects'}\n")
    shared = admin / OWN_COMMON
    shared.mkdir(exist_ok=True)
    names = dict.fromkeys([*COMMON, *sorted(p.name for p in common.iterdir())])
    links = {name: str(common / name) for name in names if name != "objects"}
    links["objects"] = f"../{OWN_OBJECTS}"
    for name, target in links.items():
        link = shared / name
        if link.is_symlink() and str(link.readlink()) == target:
            continue
        spare = shared / f".{name}.new"
        spare.unlink(missing_ok=True)
        spare.symlink_to(target)
        spare.replace(link)  # a directory there is no link of ours: refused (OSError)
    if (admin / "commondir").read_text(encoding="utf-8") != f"{OWN_COMMON}\n":
        _replace(admin / "commondir", f"{OWN_COMMON}\n")


def _replace(file: Path, text: str) -> None:
    atomic_write(file, text)


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
    """``commondir`` leads back to the repository (or to agentdeck's ``OWN_COMMON``),
    ``gitdir`` to the worktree."""
    if _read_path(admin / "commondir", admin) not in (common, admin / OWN_COMMON):
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
