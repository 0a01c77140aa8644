"""What a worktree agent committed in its own object directory, taken into its
repository's store: verified, never trusted.

A sandboxed agent writes objects only in its own directory (``OWN_OBJECTS``),
named as it likes: a file there may say it is an object the repository holds, or
hold other content than its name says, or be a link to a file the agent cannot
read itself. So its loose objects are first copied out, never through a link;
the objects its branches, its HEAD and its index reach that the repository lacks
are packed from that copy, the repository's own objects read first; the pack is
taken in by ``index-pack --strict`` (``unpack-objects --strict`` for a few, as
``receive-pack`` does), which names each object by the hash of its content and
refuses a pack whose objects do not reach only objects there or in the pack.
What the repository already held is never written. Then what the repository
now holds is removed from the agent's directory: a shadow of one of its
objects goes too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from agentdeck.core.worktree import OWN_OBJECTS, Worktree, own_namespace
from agentdeck.errors import WorktreeError
from agentdeck.worktrees.admin import View, admin_dir, git_in
from agentdeck.worktrees.git import GitFailed, git, git_bytes

UNPACK_LIMIT = 100  # fewer objects are written loose (git's transfer.unpackLimit)
_HEX2 = re.compile(r"[0-9a-f]{2}")
_REST = re.compile(r"[0-9a-f]{38}")
_OBJECT_NAME = re.compile(r"[0-9a-f]{40}")


async def take_in(worktree: Worktree) -> int:
    """The objects the agent's commits need that its repository lacks, verified and
    in its store; how many. ``WorktreeError`` when they cannot be (one missing, or
    not what its name says): nothing is taken in then, and the repository's
    objects are as they were. A worktree that is gone has nothing to take in."""
    if not Path(worktree.path).is_dir():
        return 0
    admin = await asyncio.to_thread(admin_dir, worktree)
    common = Path(worktree.git_dir).resolve()
    own = admin / OWN_OBJECTS
    if not own.is_dir():
        return 0
    staging = Path(tempfile.mkdtemp(prefix="agentdeck-objects-"))
    try:
        if not await asyncio.to_thread(_copy_loose, own, staging):
            return 0
        copied = View(
            (f"--git-dir={admin}", f"--work-tree={worktree.path}"),
            {"GIT_COMMON_DIR": str(common), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(staging)},
        )
        needed = await _reached(worktree, copied)
        missing = await _lacking(common, needed)
        if missing:
            await _pack_in(common, copied, missing)
        held = await _lacking(common, await asyncio.to_thread(_names, staging), held=True)
        await asyncio.to_thread(_drop, own, held)
        return len(missing)
    except GitFailed as exc:
        raise WorktreeError(
            f"the commits of {worktree.branch} could not be taken into the repository "
            f"({exc}); its objects are as they were"
        ) from None
    finally:
        await asyncio.to_thread(shutil.rmtree, staging, True)


async def _reached(worktree: Worktree, where: View) -> list[str]:
    """What the agent's refs, its HEAD and its index reach, short of what the
    repository's other branches, tags and remotes reach (all in its store)."""
    namespace = own_namespace(worktree.branch)
    refs = f"refs/heads/{namespace}/" if namespace else f"refs/heads/{worktree.branch}"
    tips = (
        await git_in(where, "for-each-ref", "--format=%(objectname)", refs, cwd=worktree.path)
    ).split()
    head = await git_in(
        where, "rev-parse", "--verify", "--quiet", "HEAD", cwd=worktree.path, ok=(0, 1)
    )
    tips = [t for t in dict.fromkeys([*tips, *head.split()]) if _OBJECT_NAME.fullmatch(t)]
    found: list[str] = []
    if tips:
        listed = await git_in(
            where, "rev-list", "--objects", *tips,
            "--not", "--exclude=agentdeck/*", "--branches", "--tags", "--remotes",
            cwd=worktree.path,
        )  # fmt: skip
        found += (line[:40] for line in listed.splitlines())
    index = await git_in(where, "ls-files", "--stage", "-z", cwd=worktree.path)
    for entry in index.split("\0"):
        mode, _, rest = entry.partition(" ")
        if mode and mode != "160000":  # a nested repository's commit: not ours to hold
            found.append(rest[:40])
    return [name for name in dict.fromkeys(found) if _OBJECT_NAME.fullmatch(name)]


async def _lacking(common: Path, names: list[str], *, held: bool = False) -> list[str]:
    """Which of ``names`` the repository's store lacks (``held``: holds)."""
    if not names:
        return []
    out = await git(
        f"--git-dir={common}", "cat-file", "--batch-check=%(objectname)", cwd=common,
        stdin="".join(f"{n}\n" for n in names).encode(),
    )  # fmt: skip
    missing = {line.split()[0] for line in out.splitlines() if line.endswith(" missing")}
    return [n for n in names if (n in missing) != held]


async def _pack_in(common: Path, copied: View, names: list[str]) -> None:
    pack = await git_bytes(
        *copied.args, "pack-objects", "--stdout", "-q", cwd=common, env=copied.env,
        stdin="".join(f"{n}\n" for n in names).encode(),
    )  # fmt: skip
    take = ("unpack-objects", "-q") if len(names) < UNPACK_LIMIT else ("index-pack", "--stdin")
    await git(f"--git-dir={common}", *take, "--strict", cwd=common, stdin=pack)


def _copy_loose(own: Path, staging: Path) -> bool:
    """The agent's loose objects, as files: a link, or a directory of them behind a
    link, is not followed. Whether there was any."""
    copied = False
    for folder, fd in _folders(own):
        try:
            for name in os.listdir(fd):  # noqa: PTH208 (a descriptor)
                if _REST.fullmatch(name):
                    copied |= _copy_one(fd, name, staging / folder)
        finally:
            os.close(fd)
    return copied


def _folders(own: Path) -> Iterator[tuple[str, int]]:
    """Each ``xx`` directory of loose objects, opened without following a link (the
    agent may write its object directory, and the worktree's own above it)."""
    try:
        top = os.open(own, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        for folder in os.listdir(top):  # noqa: PTH208 (a descriptor)
            if _HEX2.fullmatch(folder):
                try:
                    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                    yield folder, os.open(folder, flags, dir_fd=top)
                except OSError:
                    continue
    finally:
        os.close(top)


def _copy_one(folder_fd: int, name: str, into: Path) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            return False
        into.mkdir(exist_ok=True)
        with (into / name).open("wb") as target:
            shutil.copyfileobj(source, target)
    return True


def _names(staging: Path) -> list[str]:
    return [
        f"{folder.name}{file.name}" for folder in staging.iterdir() for file in folder.iterdir()
    ]


def _drop(own: Path, names: list[str]) -> None:
    """The agent's copies of what the repository holds (the repository's are read),
    removed where they are: a link to another directory is not followed."""
    held = set(names)
    for folder, fd in _folders(own):
        try:
            for name in os.listdir(fd):  # noqa: PTH208 (a descriptor)
                if folder + name in held:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)  # noqa: PTH108 (in a descriptor)
        finally:
            os.close(fd)
