"""A checkpoint looks only at what changed since the last one (the kernel's word,
``worktrees.watch``), and takes what a look at every file would have taken: after
each kind of change, its tree and its left-out files are those of a fresh shadow
that looks at everything."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from agentdeck.core.checkpoint import ChangedFile, Checkpoint, parse_name_status
from agentdeck.worktrees import checkpoints as checkpoints_module
from agentdeck.worktrees.checkpoints import Checkpoints
from agentdeck.worktrees.watch import Watch

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b8"
CAP = 1000


def tree_of(checkpoints: Checkpoints, checkpoint: Checkpoint) -> str:
    shadow = checkpoints.shadow(AGENT)
    return subprocess.run(
        ["git", f"--git-dir={shadow}", "rev-parse", f"{checkpoint.commit}^{{tree}}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def diff_tree(checkpoints: Checkpoints, old: Checkpoint, new: Checkpoint) -> list[ChangedFile]:
    """What git says changed between two checkpoints (the snapshot says it itself)."""
    shadow = checkpoints.shadow(AGENT)
    return parse_name_status(
        subprocess.run(
            ["git", f"--git-dir={shadow}", "diff-tree", "-r", "-z", "--name-status",
             "--no-renames", old.commit, new.commit],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip


async def full_look(tmp_path: Path, workspace: Path) -> tuple[str, list[str]]:
    """The tree and the left-out files of a first snapshot: every file looked at."""
    fresh = Checkpoints(tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}", CAP)
    taken = await fresh.snapshot(AGENT, workspace)
    return tree_of(fresh, taken), taken.skipped


def _write(rel: str, text: str | bytes) -> Callable[[Path], None]:
    def change(ws: Path) -> None:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        data = text.encode() if isinstance(text, str) else text
        (ws / rel).write_bytes(data)

    return change


STEPS: list[tuple[str, Callable[[Path], None]]] = [
    ("nothing", lambda ws: None),
    ("one file changed", _write("src/a.py", "a = 2\n")),
    ("a file made", _write("src/new.py", "new\n")),
    ("files made in new directories", _write("deep/er/still/x.txt", "x\n")),
    ("a file removed", lambda ws: (ws / "src" / "b.py").unlink()),
    ("a directory removed", lambda ws: shutil.rmtree(ws / "deep")),
    ("a mode changed", lambda ws: (ws / "src" / "a.py").chmod(0o755)),
    ("a file grown over the cap", _write("src/a.py", b"x" * (CAP + 1))),
    ("an ignored file made", _write("logs/run.log", "ignored\n")),
    ("a file over the cap made", _write("big/blob.bin", b"y" * (CAP + 1))),
    ("a file shrunk under the cap", _write("src/a.py", "a = 3\n")),
    ("the ignore rules changed", _write(".gitignore", "")),
    ("a directory renamed", lambda ws: (ws / "src").rename(ws / "lib")),
    ("a file replaced by a directory", lambda ws: _swap(ws / "lib" / "new.py")),
    ("a symlink made", lambda ws: (ws / "link").symlink_to("lib")),
    ("a repository made inside", lambda ws: _nested(ws / "vendor")),
    ("a file written twice", lambda ws: [_write("top.txt", t)(ws) for t in ("1\n", "2\n")]),
    (
        "files whose order is git's",
        lambda ws: [_write(p, p)(ws) for p in ("lib-a", "lib/zz", "lib.c")],
    ),
]


def _swap(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside.txt").write_text("inside\n")


def _nested(path: Path) -> None:
    path.mkdir()
    subprocess.run(["git", "init", "--quiet", str(path)], check=True)
    (path / "lib.c").write_text("int x;\n")


async def test_each_kind_of_change_is_taken_as_a_full_look_would(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in {"src/a.py": "a = 1\n", "src/b.py": "b\n", ".gitignore": "*.log\n"}.items():
        _write(rel, text)(ws)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    last = await checkpoints.snapshot(AGENT, ws)
    for what, change in STEPS:
        change(ws)
        taken = await checkpoints.snapshot(AGENT, ws, summary=what)
        assert (tree_of(checkpoints, taken), taken.skipped) == await full_look(tmp_path, ws), what
        assert taken.files == diff_tree(checkpoints, last, taken), what
        last = taken
    listed = await checkpoints.list_checkpoints(AGENT)
    assert [c.n for c in listed] == list(range(1, len(STEPS) + 2))
    assert listed[2].files == [ChangedFile("M", "src/a.py")]


async def test_a_rewind_then_more_changes_are_taken_right(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write("a.txt", "one\n")(ws)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    await checkpoints.snapshot(AGENT, ws)
    _write("a.txt", "two\n")(ws)
    _write("b.txt", "b\n")(ws)
    await checkpoints.snapshot(AGENT, ws)
    await checkpoints.rewind(AGENT, ws, to=1)
    assert (ws / "a.txt").read_text() == "one\n" and not (ws / "b.txt").exists()
    # Against the checkpoint the rewind took first: the rewind's doing, then a.txt's.
    expected = [[ChangedFile("M", "a.txt"), ChangedFile("D", "b.txt")], [ChangedFile("M", "a.txt")]]
    for text, files in zip(("three\n", "four\n"), expected, strict=True):
        _write("a.txt", text)(ws)
        taken = await checkpoints.snapshot(AGENT, ws)
        assert (tree_of(checkpoints, taken), taken.skipped) == await full_look(tmp_path, ws)
        assert taken.files == files


async def test_another_process_snapshotting_the_agent_is_caught_up_with(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write("a.txt", "1\n")(ws)
    mine = Checkpoints(tmp_path / "checkpoints", CAP)
    theirs = Checkpoints(tmp_path / "checkpoints", CAP)  # same shadows, its own memory
    assert (await mine.snapshot(AGENT, ws)).n == 1
    _write("a.txt", "2\n")(ws)
    assert (await theirs.snapshot(AGENT, ws)).n == 2
    _write("b.txt", "b\n")(ws)
    third = await mine.snapshot(AGENT, ws)
    assert third.n == 3
    assert third.files == [ChangedFile("A", "b.txt")]  # against theirs, not my last
    assert (tree_of(mine, third), third.skipped) == await full_look(tmp_path, ws)
    listed = await theirs.list_checkpoints(AGENT)
    assert [c.n for c in listed] == [1, 2, 3]


async def test_what_the_kernel_did_not_report_is_taken_at_the_next_full_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write through a hard link from outside the workspace reaches no watch: the
    checkpoint looked only at what the kernel reported, so it did not see it; every
    FULL_EVERY-th snapshot looks at every file and takes it."""
    monkeypatch.setattr(checkpoints_module, "FULL_EVERY", 3)
    ws = tmp_path / "ws"
    _write("linked.txt", "before\n")(ws)
    outside = tmp_path / "outside.txt"
    os.link(ws / "linked.txt", outside)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    await checkpoints.snapshot(AGENT, ws)  # a full look
    with outside.open("r+") as f:  # the same file, through the other name
        f.write("after!\n")
    seen = [(await checkpoints.snapshot(AGENT, ws)).files for _ in range(4)]
    assert seen == [[], [], [], [ChangedFile("M", "linked.txt")]]


def test_a_watch_names_the_changed_paths_and_starts_over_when_lost(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "d" / ".git").mkdir(parents=True)
    watch = Watch(ws)
    try:
        assert watch.changed() is None  # the first look: everything
        assert watch.changed() == set()
        (ws / "d" / "f.txt").write_text("x")
        (ws / "d" / ".git" / "index").write_text("git's own")
        (ws / "e" / "g").mkdir(parents=True)
        (ws / "e" / "g" / "h.txt").write_text("h")
        assert watch.changed() == {"d/f.txt", "e"}
        (ws / "e" / "g" / "i.txt").write_text("i")  # in a directory made since: watched
        assert watch.changed() == {"e/g/i.txt"}
        (ws / "e").rename(ws / "e2")  # the paths of its watches went stale
        assert watch.changed() is None
        (ws / "e2" / "g" / "j.txt").write_text("j")
        assert watch.changed() == {"e2/g/j.txt"}
        watch.forget()
        assert watch.changed() is None
    finally:
        watch.close()


def _inotify_instances() -> int:
    """This process's inotify instances, once what earlier tests let go of is
    collected (a Checkpoints an earlier test dropped closes its watch when the
    garbage collector gets to it, which could be in the middle of a count)."""
    import gc

    gc.collect()
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _link(fd) == "anon_inode:inotify")


def _link(fd: Path) -> str:
    try:
        return str(fd.readlink())
    except OSError:
        return ""


async def test_watches_let_go_of_are_closed(tmp_path: Path) -> None:
    import gc

    ws = tmp_path / "ws"
    _write("a.txt", "a\n")(ws)
    before = _inotify_instances()
    watch = Watch(ws)
    watch.changed()
    assert _inotify_instances() == before + 1
    watch.close()
    assert _inotify_instances() == before
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    await checkpoints.snapshot(AGENT, ws)
    assert _inotify_instances() == before + 1
    del checkpoints
    gc.collect()
    assert _inotify_instances() == before


async def test_a_workspace_too_big_to_watch_is_looked_at_whole_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdeck.worktrees import watch as watch_module

    monkeypatch.setattr(watch_module, "MAX_DIRECTORIES", 3)
    ws = tmp_path / "ws"
    for d in ("a", "b", "c", "d"):
        _write(f"{d}/x.txt", "x\n")(ws)
    before = _inotify_instances()
    watch = Watch(ws)
    assert [watch.changed(), watch.changed()] == [None, None]
    assert _inotify_instances() == before  # no instance kept for it
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    await checkpoints.snapshot(AGENT, ws)
    _write("d/x.txt", "changed\n")(ws)
    taken = await checkpoints.snapshot(AGENT, ws)
    assert taken.files == [ChangedFile("M", "d/x.txt")]


async def test_a_watch_in_use_is_not_let_go_of_for_another_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over ``_WATCHES``, a new watch lets go of the least recently used one, but not
    of one an agent's snapshot is reading at that moment (its fd closed under it)."""
    import asyncio
    import threading

    monkeypatch.setattr(checkpoints_module, "_WATCHES", 1)
    ws, other_ws = tmp_path / "ws", tmp_path / "other"
    _write("x.txt", "1\n")(ws)
    _write("x.txt", "1\n")(other_ws)
    checkpoints = Checkpoints(tmp_path / "checkpoints", CAP)
    other = "b1b2c3d4e5f6a7b8"
    await checkpoints.snapshot(other, other_ws)
    reading, go_on = threading.Event(), threading.Event()
    drain = Watch._drain

    def held(self: Watch) -> set[str]:
        if self.root == other_ws.resolve():
            reading.set()
            go_on.wait(30)
        return drain(self)

    monkeypatch.setattr(Watch, "_drain", held)
    _write("x.txt", "2\n")(other_ws)
    under_way = asyncio.create_task(checkpoints.snapshot(other, other_ws))
    try:
        assert await asyncio.to_thread(reading.wait, 30)
        await checkpoints.snapshot(AGENT, ws)
    finally:
        go_on.set()
    taken = await under_way
    assert taken.files == [ChangedFile("M", "x.txt")]
