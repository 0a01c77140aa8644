"""agentdeck's checkpoint watches take at most a share of the user's inotify watches
(``fs.inotify.max_user_watches`` / ``WATCH_SHARE``) across all its workspaces: the
rest stays for the user's own tools (an editor, a file watcher). A workspace that
would take it past its share is looked at whole at each checkpoint instead; what a
closed or dropped watch held is given back."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from agentdeck.worktrees import watch as watch_module
from agentdeck.worktrees.watch import BUDGET, Watch


def workspace(root: Path, directories: int) -> Path:
    """A workspace of ``directories`` directories, the workspace itself included."""
    for i in range(directories - 1):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "f.txt").write_text("x\n")
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def share(monkeypatch: pytest.MonkeyPatch) -> int:
    """A share of 6 watches on top of what this process already holds."""
    gc.collect()  # what earlier tests dropped gives its watches back first
    monkeypatch.setattr(BUDGET, "_limit", BUDGET.used + 6)
    return BUDGET.used


def test_the_share_is_a_part_of_the_users_watch_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = tmp_path / "max_user_watches"
    limit.write_text("8192\n")
    monkeypatch.setattr(watch_module, "_MAX_USER_WATCHES", limit)
    monkeypatch.setattr(BUDGET, "_limit", None)
    assert BUDGET.limit == 8192 // watch_module.WATCH_SHARE
    monkeypatch.setattr(BUDGET, "_limit", None)
    monkeypatch.setattr(watch_module, "_MAX_USER_WATCHES", tmp_path / "missing")
    assert BUDGET.limit == 8192 // watch_module.WATCH_SHARE  # the old kernels' default


def test_a_workspace_past_the_share_is_not_watched_and_a_closed_watch_gives_back(
    tmp_path: Path, share: int, caplog: pytest.LogCaptureFixture
) -> None:
    first = Watch(workspace(tmp_path / "first", 4))
    second = Watch(workspace(tmp_path / "second", 4))
    try:
        assert first.changed() is None
        assert BUDGET.used == share + 4
        assert first.changed() == set()  # watched
        caplog.set_level("INFO", logger=watch_module.__name__)
        assert [second.changed(), second.changed()] == [None, None]  # never watched
        assert BUDGET.used == share + 4  # what it took before it gave up is back
        assert "share of the inotify watches (" in caplog.text
        (tmp_path / "first" / "d0" / "f.txt").write_text("changed\n")
        assert first.changed() == {"d0/f.txt"}
        first.close()
        assert BUDGET.used == share
        third = Watch(workspace(tmp_path / "third", 5))
        assert third.changed() is None
        assert third.changed() == set()  # the room the first gave back
        assert BUDGET.used == share + 5
        del third
        gc.collect()  # dropped, not closed: its watches are given back all the same
        assert BUDGET.used == share
    finally:
        first.close()
        second.close()


def test_a_directory_removed_or_added_is_counted(tmp_path: Path, share: int) -> None:
    root = workspace(tmp_path / "ws", 3)
    watch = Watch(root)
    try:
        watch.changed()
        assert BUDGET.used == share + 3
        (root / "d0" / "f.txt").unlink()
        (root / "d0").rmdir()
        (root / "new").mkdir()
        assert watch.changed() == {"d0/f.txt", "d0", "new"}
        assert BUDGET.used == share + 3  # one gone, one come
        for i in range(4):  # past the share: the watch gives up, and everything back
            (root / f"more{i}").mkdir()
        assert watch.changed() is None
        assert BUDGET.used == share
    finally:
        watch.close()
