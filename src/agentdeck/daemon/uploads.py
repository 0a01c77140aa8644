"""Files people hand an agent (a chat attachment): saved under ``uploads/`` in
its workspace, never outside it.

The workspace is the agent's to change, so nothing in it is trusted: ``uploads``
must be a real directory (not a link an agent made to point elsewhere), the file
is created new (``O_EXCL``, never through a link), and a name already taken gets
a numbered one. Names are a single plain file name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentdeck.errors import UsageError

UPLOADS = "uploads"
MAX_UPLOAD_BYTES = 25 * 1024 * 1024  # Discord's own limit for a bot's attachment
_MAX_NAME = 128
_TRIES = 100


def check_name(name: str) -> str:
    """A plain file name: no directory part, not hidden, printable, bounded."""
    if (
        not name
        or len(name) > _MAX_NAME
        or name.startswith(".")
        or "/" in name
        or "\\" in name
        or not name.isprintable()
    ):
        raise UsageError(
            f"not a plain file name: {name[:_MAX_NAME]!r}",
            hint=f"a name of 1 to {_MAX_NAME} printable characters, no '/', not starting with '.'",
        )
    return name


def save_upload(workspace: Path, name: str, data: bytes) -> Path:
    """Write ``data`` as ``uploads/<name>`` (or ``<stem>-2<suffix>``…) in the
    workspace; the path written, relative to the workspace."""
    check_name(name)
    if len(data) > MAX_UPLOAD_BYTES:
        raise UsageError(f"{name} is too large ({len(data)} bytes; at most {MAX_UPLOAD_BYTES})")
    folder = workspace / UPLOADS
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise UsageError(f"{folder} is not a plain directory: uploads refused")
    except FileNotFoundError:
        raise UsageError(f"the agent's workspace {workspace} is gone") from None
    stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
    for n in range(1, _TRIES + 1):
        candidate = name if n == 1 else f"{stem}-{n}{dot}{suffix}"
        target = folder / candidate
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return Path(UPLOADS) / candidate
    raise UsageError(f"{_TRIES} files named like {name} are there already")
