"""Replacing a file whole: a reader sees the old one or the new one, never a part.

The one way agentdeck writes a file someone may read at any moment (the daemon's
``daemon.json``, the hook client's ``hooks.json``, the settings it installs, a
tool's kept output, a bridge's state). Cheap to import: the CLI's quick path
reads a module that uses it.

os.path and not pathlib, hence the ``noqa: PTH``: pathlib costs the quick path ~5 ms.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: its import costs the quick path ~10 ms
if TYPE_CHECKING:
    from pathlib import Path


def atomic_write(path: Path | str, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (text is UTF-8): written to a temporary file
    of a name no other writer uses, in the same directory, synced, renamed over
    ``path``, and the directory synced, so a crash or a second writer leaves one
    whole file. ``mode`` is the file's (0o600 for secrets); ``None`` keeps the
    mode ``path`` has, or gives a new file 0o666 less the umask. Given or kept, the
    temporary file is 0o600 until then: the bytes may hold keys. Raises ``OSError``
    with nothing left behind but the old file."""
    target = os.fspath(path)
    directory, name = os.path.split(target)
    directory = directory or "."
    if mode is None:
        try:
            mode = os.stat(target).st_mode & 0o7777  # noqa: PTH116
        except FileNotFoundError:
            mode = None  # created 0o666 less the umask: as open() would
    payload = data.encode("utf-8") if isinstance(data, str) else data
    # pid and random bytes: two processes, or two threads of one, never share it
    unique = f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    tmp = os.path.join(directory, unique)  # noqa: PTH118
    created = 0o600 if mode is not None else 0o666
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, created)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)  # noqa: PTH105
    except BaseException:
        try:  # noqa: SIM105 - contextlib is not loaded on the quick path
            os.unlink(tmp)  # noqa: PTH108
        except OSError:
            pass
        raise
    _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    """Make the rename durable; a file system that cannot sync a directory (some
    network and FUSE ones refuse) still has the file whole."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
