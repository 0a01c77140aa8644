"""Checkpoints before each file-changing tool call, in a shadow repository outside
the workspace, and rewinds to them: on real git, in plain directories, repositories
and worktrees, whose own repository is never touched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentdeck.core.checkpoint import (
    ChangedFile,
    Checkpoint,
    format_message,
    parse_message,
    parse_status,
    unquote,
)
from agentdeck.errors import NotFound
from agentdeck.worktrees.checkpoints import Checkpoints
from tests.worktrees.conftest import git, make_repo

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b8"


@pytest.fixture
def checkpoints(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "home" / "checkpoints", max_file_bytes=1000)


def run(cwd: Path, *command: str) -> str:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True).stdout


def repo_state(repo: Path) -> tuple[str, str, bytes, list[str]]:
    """What the user's repository holds: its status, HEAD, index and refs (read
    without refreshing the index, which a plain ``git status`` would rewrite)."""
    git_dir = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-dir").strip())
    index = (git_dir / "index").read_bytes()
    return (
        git(repo, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all"),
        git(repo, "rev-parse", "HEAD"),
        index,
        git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines(),
    )


def files_in(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


async def test_a_rewind_puts_back_what_edit_sed_and_rm_changed_and_removes_what_was_made(
    repo: Path, checkpoints: Checkpoints
) -> None:
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.txt").write_text("one\n")
    before = files_in(repo)
    first = await checkpoints.snapshot(
        AGENT, repo, tool="Edit", tool_use_id="toolu_1", summary="Edit calc.py"
    )
    assert (first.n, first.tool, first.tool_use_id, first.summary) == (
        1, "Edit", "toolu_1", "Edit calc.py",
    )  # fmt: skip
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    run(repo, "sed", "-i", "s/calc/calculator/", "README.md")  # as an agent's Bash would
    run(repo, "rm", "notes/todo.txt")
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new" / "deep" / "made.py").write_text("x = 1\n")

    done = await checkpoints.rewind(AGENT, repo, to=1)

    assert files_in(repo) == before
    assert not (repo / "new").exists()  # the directories it left empty too
    assert sorted(done.restored) == ["README.md", "calc.py", "notes/todo.txt"]
    assert done.removed == ["new/deep/made.py"]
    assert (done.to, done.dry_run, done.undo, done.patch, done.kept) == (1, False, 2, "", [])


async def test_a_rewind_is_undone_by_rewinding_to_the_checkpoint_it_took(
    repo: Path, checkpoints: Checkpoints
) -> None:
    await checkpoints.snapshot(AGENT, repo, tool="Write", summary="Write calc.py")
    (repo / "calc.py").write_text("fixed\n")
    (repo / "extra.txt").write_text("made by the agent\n")
    edited = files_in(repo)

    done = await checkpoints.rewind(AGENT, repo, to=1)
    assert (repo / "calc.py").read_text().startswith("def add")
    undo = await checkpoints.rewind(AGENT, repo, to=done.undo or 0)

    assert files_in(repo) == edited
    listed = await checkpoints.list_checkpoints(AGENT)
    assert [c.summary for c in listed] == [
        "Write calc.py", "before rewind to 1", f"before rewind to {done.undo}",
    ]  # fmt: skip
    assert undo.undo == 3


async def test_a_dry_run_changes_nothing_and_shows_the_patch(
    repo: Path, checkpoints: Checkpoints, tmp_path: Path
) -> None:
    await checkpoints.snapshot(AGENT, repo, tool="Edit", summary="Edit calc.py")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "scratch.txt").write_text("new\n")
    on_disk = files_in(repo)
    index = checkpoints.shadow(AGENT) / "index"
    index_before = index.read_bytes()

    dry = await checkpoints.rewind(AGENT, repo, to=1, dry_run=True)

    assert files_in(repo) == on_disk
    assert index.read_bytes() == index_before
    assert [c.n for c in await checkpoints.list_checkpoints(AGENT)] == [1]
    assert (dry.dry_run, dry.undo, dry.restored, dry.removed) == (
        True, None, ["calc.py"], ["scratch.txt"],
    )  # fmt: skip
    assert "diff --git a/calc.py b/calc.py" in dry.patch
    assert "-    return a + b\n+    return a - b\n" in dry.patch
    assert "deleted file mode 100644" in dry.patch and "scratch.txt" in dry.patch


async def test_ignored_files_are_neither_taken_nor_touched(
    repo: Path, checkpoints: Checkpoints
) -> None:
    (repo / "build").mkdir()
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "run.log").write_text("old log\n")
    first = await checkpoints.snapshot(AGENT, repo)
    (repo / "run.log").write_text("new log\n")
    (repo / "build" / "out.bin").write_text("artifact\n")
    (repo / "calc.py").write_text("edited\n")
    second = await checkpoints.snapshot(AGENT, repo)

    done = await checkpoints.rewind(AGENT, repo, to=1)

    assert (repo / "run.log").read_text() == "new log\n"
    assert (repo / "build" / "out.bin").read_text() == "artifact\n"
    assert (done.restored, done.removed) == (["calc.py"], [])
    assert first.files == [] and second.files == [ChangedFile("M", "calc.py")]
    shadow = checkpoints.shadow(AGENT)
    listing = run(
        shadow, "git", f"--git-dir={shadow}", "ls-tree", "-r", "--name-only", first.commit
    )
    assert "run.log" not in listing.split() and "calc.py" in listing.split()


async def test_a_file_un_ignored_since_the_checkpoint_is_kept(
    repo: Path, checkpoints: Checkpoints
) -> None:
    (repo / "secrets.env").write_text("TOKEN=1\n")
    (repo / ".gitignore").write_text("*.env\n")
    await checkpoints.snapshot(AGENT, repo)
    (repo / ".gitignore").write_text("")  # now secrets.env is taken

    done = await checkpoints.rewind(AGENT, repo, to=1)

    assert (repo / "secrets.env").read_text() == "TOKEN=1\n"
    assert done.removed == [] and done.kept == ["secrets.env"]


async def test_a_file_over_the_cap_is_skipped_listed_and_left_alone(
    repo: Path, checkpoints: Checkpoints
) -> None:
    (repo / "data.bin").write_bytes(b"x" * 2000)
    (repo / "small.txt").write_text("a\n")
    first = await checkpoints.snapshot(AGENT, repo)
    assert first.skipped == ["data.bin"]
    (repo / "data.bin").write_bytes(b"y" * 3000)
    (repo / "small.txt").write_text("b\n")
    (repo / "grown.txt").write_text("c\n")
    second = await checkpoints.snapshot(AGENT, repo)
    (repo / "grown.txt").write_bytes(b"z" * 5000)  # taken once, over the cap now

    dry = await checkpoints.rewind(AGENT, repo, to=1, dry_run=True)
    done = await checkpoints.rewind(AGENT, repo, to=1)

    assert (repo / "data.bin").read_bytes() == b"y" * 3000
    assert (repo / "grown.txt").read_bytes() == b"z" * 5000
    assert (repo / "small.txt").read_text() == "a\n"
    assert second.skipped == ["data.bin"]
    assert done.restored == dry.restored == ["small.txt"]
    assert done.removed == dry.removed == []
    assert "data.bin" not in dry.patch and "grown.txt" not in dry.patch
    listed = await checkpoints.list_checkpoints(AGENT)
    assert listed[-1].skipped == ["data.bin", "grown.txt"]


async def test_the_users_repository_is_untouched(repo: Path, checkpoints: Checkpoints) -> None:
    (repo / "calc.py").write_text("uncommitted work\n")
    (repo / "untracked.txt").write_text("mine\n")
    state = repo_state(repo)

    await checkpoints.snapshot(AGENT, repo)
    (repo / "calc.py").write_text("the agent's edit\n")
    (repo / "agent.txt").write_text("made\n")
    middle = await checkpoints.snapshot(AGENT, repo)
    await checkpoints.rewind(AGENT, repo, to=1, dry_run=True)
    await checkpoints.rewind(AGENT, repo, to=1)

    assert repo_state(repo) == state
    assert {f.path for f in middle.files} == {"calc.py", "agent.txt"}
    assert not any(p.name.startswith("index") for p in repo.iterdir())
    assert git(repo, "stash", "list") == ""


async def test_a_git_worktree_and_its_repository_are_untouched(
    repo: Path, checkpoints: Checkpoints, tmp_path: Path
) -> None:
    tree = tmp_path / "wt"
    git(repo, "worktree", "add", "--quiet", "-b", "feature", str(tree))
    (tree / "calc.py").write_text("work in progress\n")
    state, main_state = repo_state(tree), repo_state(repo)
    before = files_in(tree)

    await checkpoints.snapshot(AGENT, tree, tool="Bash", summary="Bash: make")
    (tree / "calc.py").write_text("broken\n")
    (tree / "README.md").unlink()
    (tree / "junk.txt").write_text("junk\n")
    done = await checkpoints.rewind(AGENT, tree, to=1)

    assert files_in(tree) == before
    assert (tree / ".git").is_file()
    assert (repo_state(tree), repo_state(repo)) == (state, main_state)
    assert done.removed == ["junk.txt"]


async def test_a_plain_directory_works(tmp_path: Path, checkpoints: Checkpoints) -> None:
    work = tmp_path / "plain"
    (work / "src").mkdir(parents=True)
    (work / "src" / "app.py").write_text("print('hi')\n")
    script = work / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (work / "link").symlink_to("src/app.py")
    await checkpoints.snapshot(AGENT, work)
    script.write_text("#!/bin/sh\nrm -rf /\n")
    script.chmod(0o644)
    (work / "link").unlink()
    (work / "src" / "app.py").unlink()
    (work / "src").rmdir()

    await checkpoints.rewind(AGENT, work, to=1)

    assert (work / "src" / "app.py").read_text() == "print('hi')\n"
    assert script.read_text() == "#!/bin/sh\necho hi\n" and script.stat().st_mode & 0o111
    assert (work / "link").is_symlink() and str((work / "link").readlink()) == "src/app.py"
    assert not any(p.name in ("index", "HEAD", "objects") for p in work.iterdir())


async def test_a_directory_inside_a_repository_works(repo: Path, checkpoints: Checkpoints) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("v1\n")
    state = repo_state(repo)
    await checkpoints.snapshot(AGENT, sub)
    (sub / "mod.py").write_text("v2\n")
    (repo / "calc.py").write_text("outside the workspace\n")

    done = await checkpoints.rewind(AGENT, sub, to=1)

    assert (sub / "mod.py").read_text() == "v1\n"
    assert (repo / "calc.py").read_text() == "outside the workspace\n"
    assert done.restored == ["mod.py"]
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    assert repo_state(repo) == state


async def test_files_and_directories_swapped_are_put_back(
    tmp_path: Path, checkpoints: Checkpoints
) -> None:
    work = tmp_path / "swap"
    (work / "was_dir").mkdir(parents=True)
    (work / "was_dir" / "inner.txt").write_text("inner\n")
    (work / "was_file").write_text("file\n")
    await checkpoints.snapshot(AGENT, work)
    (work / "was_dir" / "inner.txt").unlink()
    (work / "was_dir").rmdir()
    (work / "was_dir").write_text("now a file\n")
    (work / "was_file").unlink()
    (work / "was_file").mkdir()
    (work / "was_file" / "deep.txt").write_text("deep\n")

    done = await checkpoints.rewind(AGENT, work, to=1)

    assert files_in(work) == {"was_dir/inner.txt": b"inner\n", "was_file": b"file\n"}
    assert sorted(done.removed) == ["was_dir", "was_file/deep.txt"]


async def test_a_repository_made_inside_is_left_alone(
    tmp_path: Path, checkpoints: Checkpoints
) -> None:
    work = tmp_path / "outer"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    await checkpoints.snapshot(AGENT, work)
    make_repo(work / "clone", {"lib.py": "lib\n"})
    second = await checkpoints.snapshot(AGENT, work)

    done = await checkpoints.rewind(AGENT, work, to=1)

    assert (work / "clone" / "lib.py").read_text() == "lib\n"
    assert git(work / "clone", "rev-list", "--count", "HEAD").strip() == "1"
    assert second.files == [] and done.removed == []


async def test_line_endings_and_filters_are_not_applied(
    tmp_path: Path, checkpoints: Checkpoints
) -> None:
    work = make_repo(tmp_path / "crlf", {".gitattributes": "* text=auto eol=lf\n*.dat filter=x\n"})
    git(work, "config", "filter.x.clean", "false")  # would fail if it ran
    (work / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    (work / "a.dat").write_bytes(b"raw\r\n")
    await checkpoints.snapshot(AGENT, work)
    (work / "win.txt").write_bytes(b"changed\n")
    (work / "a.dat").write_bytes(b"changed\n")

    await checkpoints.rewind(AGENT, work, to=1)

    assert (work / "win.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert (work / "a.dat").read_bytes() == b"raw\r\n"


async def test_checkpoints_are_listed_in_order_with_the_files_changed(
    repo: Path, checkpoints: Checkpoints
) -> None:
    assert await checkpoints.list_checkpoints(AGENT) == []
    await checkpoints.snapshot(AGENT, repo, tool="Write", tool_use_id="t1", summary="Write a.py")
    (repo / "a.py").write_text("a\n")
    await checkpoints.snapshot(AGENT, repo, tool="Bash", tool_use_id="t2", summary="Bash: rm\nx")
    (repo / "README.md").unlink()
    (repo / "calc.py").write_text("changed\n")
    await checkpoints.snapshot(AGENT, repo, tool="Edit", tool_use_id="t3", summary="Edit calc.py")
    await checkpoints.snapshot(AGENT, repo, tool="Bash", tool_use_id="t4", summary="Bash: ls")

    listed = await checkpoints.list_checkpoints(AGENT)

    assert [c.n for c in listed] == [1, 2, 3, 4]
    assert [c.tool_use_id for c in listed] == ["t1", "t2", "t3", "t4"]
    assert listed[1].summary == "Bash: rm x"  # one line
    assert [c.files for c in listed] == [
        [],
        [ChangedFile("A", "a.py")],
        [ChangedFile("D", "README.md"), ChangedFile("M", "calc.py")],
        [],  # nothing changed: still on the timeline
    ]
    assert listed[2].counts == {"D": 1, "M": 1}
    assert listed[0].ts <= listed[3].ts
    assert listed[3].to_dict()["files"] == [] and listed[1].to_dict()["n"] == 2
    assert len({c.commit for c in listed}) == 4


async def test_an_unknown_checkpoint_is_not_found(repo: Path, checkpoints: Checkpoints) -> None:
    with pytest.raises(NotFound, match="it has none yet"):
        await checkpoints.rewind(AGENT, repo, to=1)
    assert not checkpoints.shadow(AGENT).exists()
    await checkpoints.snapshot(AGENT, repo)
    for n in (0, 2):
        with pytest.raises(NotFound) as caught:
            await checkpoints.rewind(AGENT, repo, to=n, dry_run=True)
        assert str(caught.value) == (
            f"no checkpoint of agent {AGENT} with id '{n}' (it has checkpoints 1 to 1)"
        )


async def test_snapshots_of_one_agent_take_turns(repo: Path, checkpoints: Checkpoints) -> None:
    import asyncio

    taken = await asyncio.gather(*(checkpoints.snapshot(AGENT, repo) for _ in range(4)))
    assert sorted(c.n for c in taken) == [1, 2, 3, 4]


async def test_drop_deletes_the_shadow(repo: Path, checkpoints: Checkpoints) -> None:
    await checkpoints.snapshot(AGENT, repo)
    assert checkpoints.shadow(AGENT).stat().st_mode & 0o777 == 0o700
    await checkpoints.drop(AGENT)
    assert not checkpoints.shadow(AGENT).exists()
    assert await checkpoints.list_checkpoints(AGENT) == []
    assert (await checkpoints.snapshot(AGENT, repo)).n == 1


async def test_checkpoints_inside_the_workspace_are_not_snapshotted(tmp_path: Path) -> None:
    home = tmp_path / "user"
    (home / "project").mkdir(parents=True)
    (home / "project" / "x.txt").write_text("x\n")
    checkpoints = Checkpoints(home / ".agentdeck" / "checkpoints")
    await checkpoints.snapshot(AGENT, home)
    second = await checkpoints.snapshot(AGENT, home)
    assert second.files == []


def test_a_message_carries_the_checkpoint() -> None:
    files = [ChangedFile("M", f"f{i}.py") for i in range(150)]
    text = format_message(
        7, 12.5, tool="Edit", tool_use_id="t", summary="Edit a\nb", files=files, skipped=["big"]
    )
    assert text.startswith("checkpoint 7: Edit a b\n\n")
    parsed = parse_message("c0ffee", text)
    assert isinstance(parsed, Checkpoint)
    assert (parsed.n, parsed.ts, parsed.summary, parsed.skipped) == (7, 12.5, "Edit a b", ["big"])
    assert len(parsed.files) == 100 and parsed.counts == {"M": 150}
    assert parse_message("c0ffee", "an ordinary commit\n\n{}\n") is None


def test_status_entries_are_sorted_by_what_to_do() -> None:
    changes = parse_status(" M a\0?? b\0 D c\0?? nested/\0M  d\0AD e\0 T f\0")
    assert changes.present == ["a", "b", "f"]
    assert changes.gone == ["c", "e"]
    assert changes.tracked == {"a", "f"}
    assert changes.nested == ["nested/"]


def test_quoted_paths_read_back() -> None:
    assert unquote("plain name.txt") == "plain name.txt"
    assert unquote('"tab\\there \\"q\\" \\\\ caf\\303\\251"') == 'tab\there "q" \\ café'
