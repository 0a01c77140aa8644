"""Room kept on the database's disk for the writes that must land when it fills.

A full disk fails every write to the database. The one that must not fail is
the one saying an agent ended, and why ("the disk is full: …"): without it the
board shows the agent ``running`` with no process behind it. So the store keeps
a small file of allocated blocks next to the database (``<db>.reserve``, on the
same filesystem by construction). When a write the caller marked essential
fails for lack of room, the writer deletes the file and tries that write once
more, in the room it freed. From then on (``spent``) the writer refuses the
writes that are not essential while the disk lacks room to make the reserve
again (twice its size, by ``statvfs``: cheap), so the room freed is the other
agents' ends' too; once there is room the reserve is made again and every
write goes through.

Blocking file I/O: only the writer thread (and ``Store.open``) call this.

SQLite only: a PostgreSQL store has no file beside it, and its server manages its
own disk (a full one fails the writes with ``DiskFull``, SQLSTATE 53100, nothing
kept in reserve).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

RESERVE_BYTES = 512 * 1024  # an agent row and a few events, with WAL frames, many times over


def is_disk_full(exc: BaseException) -> bool:
    """SQLite's SQLITE_FULL ("database or disk is full"), PostgreSQL's disk_full,
    or the OS's ENOSPC/EDQUOT,
    raised as such or wrapped (SQLAlchemy keeps the driver's error in ``orig``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "sqlite_errorname", None) == "SQLITE_FULL":
            return True
        if getattr(current, "sqlstate", None) == "53100":  # PostgreSQL's disk_full
            return True
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return False


class Reserve:
    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size
        self.spent = False  # released for an essential write, not made again yet

    @property
    def held(self) -> bool:
        return self.path.exists()

    def make(self) -> bool:
        """Allocate the reserve if it is missing; True if it is there now. With no
        room for it nothing is left behind (a partial file would only eat room)."""
        if self.held:
            return True
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return True
        except OSError as exc:
            logger.warning("no room kept for the database at %s: %s", self.path, exc.strerror)
            return False
        try:
            try:
                os.posix_fallocate(fd, 0, self.size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                with os.fdopen(os.dup(fd), "wb") as out:  # a filesystem without fallocate
                    out.write(bytes(self.size))
        except OSError as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            logger.warning("no room kept for the database at %s: %s", self.path, exc.strerror)
            return False
        os.close(fd)
        self.spent = False
        return True

    def remake_due(self) -> bool:
        """Missing, and the disk has room for it twice over: after a write lands,
        the writer makes it again."""
        if self.held:
            return False
        try:
            disk = os.statvfs(self.path.parent)
        except OSError:
            return False
        return disk.f_bavail * disk.f_frsize >= 2 * self.size

    def release(self) -> bool:
        """Delete the reserve; True if there was one to give back to the disk."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            logger.error("could not release the room kept at %s: %s", self.path, exc.strerror)
            return False
        self.spent = True
        return True
