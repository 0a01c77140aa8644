"""A workspace's first checkpoint, written as packs instead of a loose object per file.

``git update-index --add`` writes each new file as a loose object: a file of its own,
compressed, in one of 256 directories. On 10,000 files that is most of a first
checkpoint (hashing them all takes 0.25 s; writing them 10 to 18 s on a loaded 2-CPU
machine, 4 to 5 s on a quiet one). Here the files are read once, their blob ids
computed as git would, and the blobs streamed to ``git fast-import``, which writes
one pack per ``BATCH_BYTES``; the index gets the entries (``--index-info``), then
its stat data (``--refresh``, which hashes the files again: the quick part).

The workspace is the agent's, so it may be hostile: a path is read only if it is a
regular file or a symlink when opened (``O_NOFOLLOW``, ``O_NONBLOCK``: a FIFO put in
its place never blocks; ``fstat`` says what was opened), never more than the size
cap plus one byte. A path that is something else by then (a FIFO, a directory,
beyond a symlink), unreadable or grown over the cap is left out, as a large file is;
one gone by then is left to ``update-index``, as before. What is taken is the file
as it was read: a change after the read is a change the next checkpoint sees.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.worktrees.shadow_git import git_dir, run_git, with_work_tree

PACK_AT_LEAST = 256  # files: fewer are as quick through update-index
BATCH_BYTES = 64 * 1024 * 1024  # read into memory, then packed, at a time


@dataclass
class _Batch:
    stream: list[bytes] = field(default_factory=list)
    entries: list[bytes] = field(default_factory=list)  # b"MODE SHA\tPATH", for --index-info
    size: int = 0


@dataclass
class Packed:
    left: list[str]  # gone by now: for update-index, as before
    skipped: list[str]  # over the cap, unreadable or no longer a file, by now


async def pack_into_index(shadow: Path, workspace: Path, paths: list[str], cap: int) -> Packed:
    """``paths`` (regular files and symlinks as ``measure`` found them) packed into the
    shadow repository and entered in its index, with their stat data."""
    packed = Packed([], [])
    batches = _batches(workspace, paths, cap, packed)
    entries: list[bytes] = []
    try:
        while batch := await asyncio.to_thread(next, batches, None):
            entries += await _pack(shadow, batch)
    finally:
        batches.close()  # its directories, if a git failed first
    if entries:
        where = with_work_tree(shadow, workspace)
        await run_git(*where, "update-index", "-z", "--index-info", cwd=workspace,
                      stdin=b"\0".join(entries) + b"\0")  # fmt: skip
        # Exit 1: some file changed since it was read (the next checkpoint sees it).
        # --split-index: every entry into the shared index, so that the next
        # checkpoint writes only what changed (all 10,000 were in the index proper:
        # a one-file change 20 → 36 ms).
        await run_git(*where, "update-index", "-q", "--refresh", "--split-index",
                      cwd=workspace, ok=(0, 1))  # fmt: skip
    return packed


async def _pack(shadow: Path, batch: _Batch) -> list[bytes]:
    """A batch's blobs into one pack (or loose, when few: fast-import's choice); its
    index entries."""
    if batch.stream:
        stream = b"".join([*batch.stream, b"done\n"])
        # Quick over small: zlib's fastest level, no delta search (a checkpoint's
        # blobs are read back one at a time, by a rewind).
        await run_git("-c", "pack.compression=1", git_dir(shadow), "fast-import",
                      "--quiet", "--done", "--depth=0", cwd=shadow, stdin=stream)  # fmt: skip
    return batch.entries


def _batches(
    workspace: Path, paths: list[str], cap: int, packed: Packed
) -> Generator[_Batch, None, None]:
    batch = _Batch()
    with _Directories(workspace) as directories:
        for path in paths:
            read = directories.read(path, cap)
            if read is None:
                packed.left.append(path)
                continue
            if read is _NOT_TAKEN:
                packed.skipped.append(path)
                continue
            mode, data = read
            sha = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False)
            batch.stream.append(b"blob\ndata %d\n" % len(data) + data + b"\n")
            batch.entries.append(b"%s %s\t%s" % (mode, sha.hexdigest().encode(), os.fsencode(path)))
            batch.size += len(data)
            if batch.size >= BATCH_BYTES:
                yield batch
                batch = _Batch()
    yield batch


_NOT_TAKEN = (b"", b"")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _Directories:
    """The workspace's directories, each opened a component at a time from the
    workspace without following a symlink: a directory the agent swaps for a symlink
    (to ``/etc``) after ``status`` named a file in it is never gone through, as git
    itself refuses a path beyond a symlink. Paths come sorted: one directory open at
    a time."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._root = -1
        self._at: tuple[str, int] | None = None  # the directory open now, and its fd

    def __enter__(self) -> _Directories:
        self._root = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self

    def __exit__(self, *_: object) -> None:
        self._leave()
        os.close(self._root)

    def read(self, path: str, cap: int) -> tuple[bytes, bytes] | None:
        """``(mode, content)`` of a regular file or symlink as git stores it; ``None``
        if it is gone (``update-index`` drops it); ``_NOT_TAKEN`` if it is over the
        cap, unreadable, beyond a symlink or no longer a file (a FIFO, a directory)."""
        head, _, name = path.rpartition("/")
        directory = self._enter(head)
        if directory is None:
            return _NOT_TAKEN
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)  # noqa: PTH116 - dir_fd
        except FileNotFoundError:
            return None
        except OSError:
            return _NOT_TAKEN
        if stat.S_ISLNK(info.st_mode):
            try:
                return b"120000", os.fsencode(os.readlink(name, dir_fd=directory))  # noqa: PTH115
            except FileNotFoundError:
                return None
            except OSError:
                return _NOT_TAKEN
        if not stat.S_ISREG(info.st_mode):
            return _NOT_TAKEN
        try:
            fd = os.open(name, _FILE, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError:
            return _NOT_TAKEN
        try:
            return _content(fd, cap)
        finally:
            os.close(fd)

    def _enter(self, head: str) -> int | None:
        if not head:
            return self._root
        if self._at is not None and self._at[0] == head:
            return self._at[1]
        self._leave()
        fd = self._root
        try:
            for part in head.split("/"):
                opened = os.open(part, _DIRECTORY, dir_fd=fd)
                if fd != self._root:
                    os.close(fd)
                fd = opened
        except OSError:
            if fd != self._root:
                os.close(fd)
            return None
        self._at = (head, fd)
        return fd

    def _leave(self) -> None:
        if self._at is not None:
            os.close(self._at[1])
            self._at = None


def _content(fd: int, cap: int) -> tuple[bytes, bytes]:
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return _NOT_TAKEN  # a FIFO or a device put in the file's place
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return _NOT_TAKEN
    if size > cap:
        return _NOT_TAKEN
    return (b"100755" if opened.st_mode & stat.S_IXUSR else b"100644"), b"".join(chunks)
