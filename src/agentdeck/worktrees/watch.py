"""What changed in a workspace since the last look, as the kernel saw it (inotify).

A checkpoint asks git only about these paths instead of having it look at every
file of the workspace: after a one-file change on 10,000 files, one path. The
kernel queues an event in the system call that changes a file, so every change a
tool call made is in the queue when the next checkpoint reads it.

Whenever the watch cannot vouch for the whole workspace, ``changed`` answers
``None`` (look at everything) and the watch starts again: the first look, a
queue that overflowed, a directory moved or renamed (the paths of its watches
went stale), the workspace itself moved or gone. A workspace with more than
``MAX_DIRECTORIES`` directories is not watched at all, nor one that would take
this process past its share of the kernel's per-user watch limit (a
``WATCH_SHARE``-th of ``fs.inotify.max_user_watches``, for all its workspaces:
the rest is the user's own tools'), nor where inotify is missing.
Changes the kernel does not report to a watch (a write through a hard link from
outside the workspace, a network file system changed by another machine) are
seen at the next look at everything.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import struct
import weakref
from pathlib import Path

logger = logging.getLogger(__name__)

MAX_DIRECTORIES = 10_000
WATCH_SHARE = 4  # this process takes at most this part of the user's inotify watches
_MAX_USER_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
_OLD_DEFAULT_WATCHES = 8192  # the kernel's default before 5.11, when it cannot be read

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_EXCL_UNLINK = 0x04000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
    | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
    | _IN_EXCL_UNLINK
)  # fmt: skip
_SELF = _IN_DELETE_SELF | _IN_MOVE_SELF  # of a subdirectory: its parent's event says it
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len
_SKIP = ".git"  # git never takes a .git directory: what happens inside is not ours


class _Lost(Exception):
    """The watch can no longer vouch for the workspace; ``final``: nor can it again."""

    def __init__(self, reason: str, *, final: bool = False) -> None:
        super().__init__(reason)
        self.final = final


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6", use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch  # noqa: B018 - present, or AttributeError
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


class _Budget:
    """The inotify watches this process holds, across all its workspaces."""

    def __init__(self) -> None:
        self.used = 0
        self._limit: int | None = None

    @property
    def limit(self) -> int:
        if self._limit is None:
            try:
                watches = int(_MAX_USER_WATCHES.read_text())
            except (OSError, ValueError):
                watches = _OLD_DEFAULT_WATCHES
            self._limit = max(watches // WATCH_SHARE, 1)
        return self._limit


BUDGET = _Budget()


def _release(fd: int, paths: dict[int, str]) -> None:
    """A watch's fd closed (its watches go with it): their share is given back."""
    os.close(fd)
    BUDGET.used -= len(paths)
    paths.clear()


class Watch:
    """The changes under ``root`` (a resolved directory) since the last ``changed``,
    but for those under ``skip`` (a directory relative to it, not watched)."""

    def __init__(self, root: Path, skip: str | None = None) -> None:
        self.root = root
        self.skip = skip
        self._fd: int | None = None
        self._closer: weakref.finalize[..., Watch] | None = None  # the fd, when dropped
        self._paths: dict[int, str] = {}  # watch descriptor -> directory, relative ("" = root)
        self._unwatchable = False

    def changed(self) -> set[str] | None:
        """Paths (relative to the root; a directory stands for all it holds) that may
        have changed since the last call, or ``None``: look at everything. Any later
        change is in the next answer."""
        if self._fd is None:
            self._start()
            return None
        try:
            return self._drain()
        except _Lost:
            self.close()
            self._start()
            return None

    def forget(self) -> None:
        """What was read from the queue was not used: the next answer is ``None``."""
        self.close()

    def close(self) -> None:
        if self._closer is not None:
            self._closer()  # closes the fd, once
        self._fd = self._closer = None
        self._paths = {}

    def _start(self) -> None:
        if _LIBC is None or self._unwatchable:
            return
        fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            logger.info("no inotify for %s: %s", self.root, os.strerror(ctypes.get_errno()))
            return
        self._fd = fd
        self._closer = weakref.finalize(self, _release, fd, self._paths)
        try:
            self._add_tree("")
        except _Lost as exc:
            logger.info("not watching %s: %s", self.root, exc)
            self.close()
            self._unwatchable = exc.final

    def _add_tree(self, top: str) -> None:
        """Watches on ``top`` and every directory under it."""
        pending = [top]
        while pending:
            rel = pending.pop()
            if len(self._paths) >= MAX_DIRECTORIES:
                raise _Lost(f"more than {MAX_DIRECTORIES} directories", final=True)
            if BUDGET.used >= BUDGET.limit:
                raise _Lost(
                    f"agentdeck's share of the inotify watches ({BUDGET.limit}, a "
                    f"{WATCH_SHARE}th of fs.inotify.max_user_watches) is taken",
                    final=True,
                )
            if not self._add(rel):
                continue
            try:
                with os.scandir(self.root / rel if rel else self.root) as entries:
                    for entry in entries:
                        below = f"{rel}/{entry.name}" if rel else entry.name
                        if self._skipped(below, entry.name):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(below)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone meanwhile: its parent's event says so
            except OSError as exc:
                raise _Lost(f"cannot list {rel or '.'}: {exc}") from exc

    def _add(self, rel: str) -> bool:
        assert _LIBC is not None and self._fd is not None
        path = os.fsencode(self.root / rel if rel else self.root)
        wd = _LIBC.inotify_add_watch(self._fd, path, _MASK)
        if wd >= 0:
            if wd not in self._paths:  # a directory met twice (a bind mount) is one watch
                BUDGET.used += 1
            self._paths[wd] = rel
            return True
        error = ctypes.get_errno()
        if error in (2, 20):  # ENOENT, ENOTDIR: gone or replaced meanwhile
            if rel:
                return False
            raise _Lost("the workspace is gone")
        if error == 28:  # ENOSPC: the kernel's per-user watch limit
            raise _Lost("the kernel's inotify watch limit was reached", final=True)
        raise _Lost(f"cannot watch {rel or '.'}: {os.strerror(error)}")

    def _skipped(self, rel: str, name: str) -> bool:
        return name == _SKIP or (
            self.skip is not None and (rel == self.skip or rel.startswith(self.skip + "/"))
        )

    def _drain(self) -> set[str]:
        assert self._fd is not None
        changed: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return changed
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
                raw = data[at + _EVENT.size : at + _EVENT.size + length]
                at += _EVENT.size + length
                self._event(wd, mask, os.fsdecode(raw.rstrip(b"\0")), changed)

    def _event(self, wd: int, mask: int, name: str, changed: set[str]) -> None:
        if mask & _IN_IGNORED:
            if self._paths.pop(wd, None) is not None:
                BUDGET.used -= 1
            return
        if mask & _IN_Q_OVERFLOW:
            raise _Lost("events were lost (the queue overflowed)")
        directory = self._paths.get(wd)
        if mask & _SELF and directory == "":
            raise _Lost("the workspace moved or went")
        if directory is None or mask & _SELF:
            return
        rel = f"{directory}/{name}" if directory else name
        if self._skipped(rel, name):
            return
        if mask & _IN_ISDIR:
            if mask & (_IN_MOVED_FROM | _IN_MOVED_TO):
                raise _Lost(f"directory {rel} moved")
            if mask & _IN_CREATE:
                self._add_tree(rel)
        changed.add(rel)
