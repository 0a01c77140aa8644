"""atomic_write: a reader sees the old file or the new one, whoever writes at once."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agentdeck.files import atomic_write

WRITES = 60


def _contents(tag: bytes) -> bytes:
    return tag * (256 * 1024)  # large enough that a write is many system calls


def test_two_writers_racing_never_leave_a_torn_or_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    first, second = _contents(b"a"), _contents(b"b")
    atomic_write(path, first, mode=0o600)
    errors: list[BaseException] = []
    seen: list[bytes] = []
    done = threading.Event()

    def writer(data: bytes) -> None:
        try:
            for _ in range(WRITES):
                atomic_write(path, data, mode=0o600)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    def reader() -> None:
        while not done.is_set():
            try:
                seen.append(path.read_bytes())
            except BaseException as exc:  # noqa: BLE001 - a missing file is the failure
                errors.append(exc)
                return

    threads = [threading.Thread(target=writer, args=(d,)) for d in (first, second)]
    watching = threading.Thread(target=reader)
    watching.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watching.join()

    assert errors == []
    assert seen
    assert all(text in (first, second) for text in seen), "a reader saw a torn file"
    assert path.read_bytes() in (first, second)
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"], "a temporary left"


def test_the_mode_is_kept_or_given(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.write_text("old")
    kept.chmod(0o640)
    atomic_write(kept, "new")
    assert kept.read_text() == "new"
    assert kept.stat().st_mode & 0o777 == 0o640

    secret = tmp_path / "secret"
    secret.write_text("old")
    secret.chmod(0o644)
    atomic_write(secret, "key", mode=0o600)
    assert secret.stat().st_mode & 0o777 == 0o600

    fresh = tmp_path / "fresh"
    umask = os.umask(0o022)
    try:
        atomic_write(fresh, "text")
    finally:
        os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "daemon.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        atomic_write(path, 12)  # type: ignore[arg-type]
    with pytest.raises(OSError):
        atomic_write(tmp_path / "missing" / "file", "text")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["daemon.json"]
