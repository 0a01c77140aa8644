"""Files handed to an agent land under uploads/ in its workspace, and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdeck.daemon.uploads import MAX_UPLOAD_BYTES, save_upload
from agentdeck.errors import UsageError


def test_a_file_is_saved_under_uploads_and_a_taken_name_gets_a_number(tmp_path: Path) -> None:
    assert save_upload(tmp_path, "notes.txt", b"one") == Path("uploads/notes.txt")
    assert save_upload(tmp_path, "notes.txt", b"two") == Path("uploads/notes-2.txt")
    assert save_upload(tmp_path, "Makefile", b"three") == Path("uploads/Makefile")
    assert save_upload(tmp_path, "Makefile", b"four") == Path("uploads/Makefile-2")
    assert (tmp_path / "uploads/notes.txt").read_bytes() == b"one"
    assert (tmp_path / "uploads/notes-2.txt").read_bytes() == b"two"


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".bashrc", "a\\b", "nul\x00", "x" * 200])
def test_only_a_plain_file_name_is_taken(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="not a plain file name"):
        save_upload(tmp_path, name, b"x")
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())


def test_a_link_planted_in_the_workspace_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "uploads").symlink_to(outside)
    with pytest.raises(UsageError, match="not a plain directory"):
        save_upload(work, "a.txt", b"x")
    (work / "uploads").unlink()
    (work / "uploads").mkdir()
    (work / "uploads" / "b.txt").symlink_to(outside / "b.txt")
    assert save_upload(work, "b.txt", b"y") == Path("uploads/b-2.txt")
    assert list(outside.iterdir()) == []


def test_too_large_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="too large"):
        save_upload(tmp_path, "big.bin", b"\0" * (MAX_UPLOAD_BYTES + 1))
