"""Worktrees for agents on real git repositories: made, refused with one clear
line, committed at a turn's end, diffed against where they started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdeck.core.worktree import (
    Start,
    Worktree,
    branch_name,
    dirty,
    parse_numstat,
    parse_start,
    start_query,
)
from agentdeck.errors import WorktreeError
from agentdeck.worktrees import Worktrees
from agentdeck.worktrees import git as git_module
from tests.worktrees.conftest import git

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b8"


@pytest.fixture
def trees(tmp_path: Path) -> Worktrees:
    return Worktrees(tmp_path / "home" / "worktrees")


async def test_a_worktree_is_a_new_branch_from_the_current_one(
    repo: Path, trees: Worktrees
) -> None:
    wt = await trees.create(AGENT, "Fix the Calc!", repo)
    assert wt.branch == f"agentdeck/{AGENT}/fix-the-calc"
    assert Path(wt.path) == trees.root / AGENT
    assert (Path(wt.path) / "calc.py").read_text().startswith("def add")
    assert wt.base == "main" and wt.base_commit == git(repo, "rev-parse", "main").strip()
    assert wt.repo == str(repo) and wt.git_dir == str(repo / ".git")
    assert git(Path(wt.path), "branch", "--show-current").strip() == wt.branch
    assert Worktree.from_extra({"worktree": wt.to_dict()}) == wt


async def test_a_base_ref_is_where_it_starts(repo: Path, trees: Worktrees) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("# calc, v2\n")
    git(repo, "commit", "--quiet", "-am", "v2")
    wt = await trees.create(AGENT, "old", repo, base=first)
    assert wt.base_commit == first
    assert (Path(wt.path) / "README.md").read_text() == "# calc\n"


@pytest.mark.parametrize(
    ("setup", "base", "message"),
    [
        ("plain", None, "is not in a git repository"),
        ("detached", None, "has a detached HEAD: no branch to start the worktree from"),
        ("dirty", None, "has uncommitted changes (calc.py): the worktree starts from the last"),
        ("clean", "no-such-ref", "has no commit 'no-such-ref'"),
        # Read as one of rev-parse's options where the checks are asked at once.
        ("clean", "--show-toplevel", "has no commit '--show-toplevel'"),
        ("clean", "--branches", "has no commit '--branches'"),
        ("taken", None, f"branch agentdeck/{AGENT}/w already exists"),
        # Its directory of refs must be its own: nothing else may live there.
        ("namespace", None, f"branch agentdeck/{AGENT}/other already exists"),
        ("namespace-ref", None, f"branch agentdeck/{AGENT} already exists"),
    ],
)
async def test_what_cannot_be_a_worktree_is_refused_in_one_line(
    repo: Path, trees: Worktrees, tmp_path: Path, setup: str, base: str | None, message: str
) -> None:
    where = repo
    if setup == "plain":
        where = tmp_path / "plain"
        where.mkdir()
    elif setup == "detached":
        git(repo, "checkout", "--quiet", "--detach")
    elif setup == "dirty":
        (repo / "calc.py").write_text("changed\n")
    elif setup == "taken":
        git(repo, "branch", f"agentdeck/{AGENT}/w")
    elif setup == "namespace":
        git(repo, "branch", f"agentdeck/{AGENT}/other")
    elif setup == "namespace-ref":
        git(repo, "branch", f"agentdeck/{AGENT}")
    with pytest.raises(WorktreeError) as caught:
        await trees.create(AGENT, "w", where, base=base)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (trees.root / AGENT).exists()


async def test_the_checks_are_asked_of_git_at_once(
    repo: Path, trees: Worktrees, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every git process agentdeck starts, as git's own trace names it (its children
    # are named under their parent's session: not counted).
    trace = tmp_path / "trace2.json"
    monkeypatch.setitem(git_module._ENV, "GIT_TRACE2_EVENT", str(trace))
    (repo / "sub").mkdir()
    wt = await trees.create(AGENT, "w", repo / "sub")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    started = [e["argv"][1:] for e in events if e["event"] == "start" and "/" not in e["sid"]]
    # One rev-parse while the drivers are looked up, then status with them blanked.
    commands = [argv[0] for argv in started]
    assert sorted(commands[:2]) == ["config", "rev-parse"]
    assert commands[2:] == ["status", "worktree"]
    assert wt.base == "main" and wt.base_commit == git(repo, "rev-parse", "main").strip()
    assert wt.repo == str(repo) and wt.git_dir == str(repo / ".git")


async def test_a_dirty_repository_can_start_from_its_last_commit_when_asked(
    repo: Path, trees: Worktrees
) -> None:
    (repo / "calc.py").write_text("changed\n")
    (repo / "scratch.txt").write_text("untracked files do not make it dirty\n")
    wt = await trees.create(AGENT, "w", repo, base="main")
    assert (Path(wt.path) / "calc.py").read_text().startswith("def add")


async def test_the_turns_work_is_committed_on_the_branch_and_nothing_else(
    repo: Path, trees: Worktrees
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    assert await trees.commit_wip(wt, "nothing yet") is None
    work = Path(wt.path)
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (work / "notes.md").write_text("fixed add\n")
    (work / "debug.log").write_text("ignored\n")
    commit = await trees.commit_wip(wt, "agentdeck: w, work in progress (turn 1)")
    assert commit == git(work, "rev-parse", wt.branch).strip()
    shown = git(work, "show", "--stat", "--format=%an <%ae>%n%s", commit)
    assert "agentdeck <agentdeck@localhost>" in shown and "work in progress" in shown
    assert "calc.py" in shown and "notes.md" in shown and "debug.log" not in shown
    assert git(repo, "rev-parse", "main").strip() == wt.base_commit  # main did not move
    assert git(repo, "status", "--porcelain") == ""  # nor did its working tree


async def test_the_diff_shows_commits_edits_and_new_files_against_the_start(
    repo: Path, trees: Worktrees
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    await trees.commit_wip(wt, "turn 1")
    (work / "README.md").write_text("# calc\n\nAdds numbers.\n")  # uncommitted
    (work / "new.py").write_text("x = 1\ny = 2\n")  # untracked
    (work / "blob.bin").write_bytes(b"\x00\x01\x02")
    found = await trees.diff(wt)
    by_path = {f.path: (f.added, f.removed) for f in found.files}
    assert by_path == {
        "calc.py": (1, 1), "README.md": (2, 0), "new.py": (2, 0), "blob.bin": (None, None),
    }  # fmt: skip
    assert found.against == wt.base_commit
    assert "-    return a - b\n+    return a + b" in found.patch and "+y = 2" in found.patch
    assert "\x1b[" not in found.patch
    assert "\x1b[" in (await trees.diff(wt, color=True)).patch
    assert (await trees.diff(wt, patch=False)).patch == ""
    # Against main after main moved on: still only the agent's own changes.
    (repo / "other.py").write_text("z = 3\n")
    git(repo, "add", "other.py")
    git(repo, "commit", "--quiet", "-m", "main moves")
    assert "other.py" not in {f.path for f in (await trees.diff(wt, against="main")).files}


def test_parsers_of_git_output() -> None:
    assert parse_numstat("1\t2\ta.py\0-\t-\tb.bin\0" + "3\t0\t\0old.py\0new.py\0") == [
        parse_numstat("1\t2\ta.py\0")[0],
        parse_numstat("-\t-\tb.bin\0")[0],
        parse_numstat("3\t0\tnew.py\0")[0],
    ]
    assert dirty(" M a.py\0?? b.py\0R  new.py\0old.py\0") == ["a.py", "b.py", "new.py"]
    assert branch_name("../Weird  name..", "0123456789") == "agentdeck/0123456789/weird-name"
    assert branch_name("", "0123456789") == "agentdeck/0123456789/agent"
    assert branch_name("x.lock", "0123456789") == "agentdeck/0123456789/x"


def test_where_a_worktree_starts_is_read_from_one_rev_parse() -> None:
    sha = "a" * 40
    query = start_query(None, "agentdeck/0123")
    assert (
        query[0] == "rev-parse"
        and "HEAD^{commit}" in query
        and "--branches=agentdeck/0123" in query
    )
    assert "main^{commit}" in start_query("main", "agentdeck/0123")
    assert parse_start(f"/r\n/r/.git\n{sha}\nrefs/heads/main\nmain\n") == Start(
        "/r", "/r/.git", sha, "main"
    )
    assert parse_start(f"/r\n/r/.git\n{'b' * 64}\nHEAD\nHEAD\n") == Start(
        "/r", "/r/.git", "b" * 64, None
    )  # a detached HEAD (a SHA-256 repository)
    refused = [
        # a branch already in the agent's directory of refs
        f"/r\n/r/.git\n{sha}\nrefs/heads/main\nrefs/heads/agentdeck/0123/x\nmain\n",
        # a base read as an option, printed back
        "/r\n/r/.git\n--show-toplevel^{commit}\nrefs/heads/main\nmain\n",
        # a newline in the repository's path
        f"/r\nx\n/r\nx/.git\n{sha}\nrefs/heads/main\nmain\n",
        f"r\n/r/.git\n{sha}\nrefs/heads/main\nmain\n",
        f"/r\n/r/.git\n{sha}\nrefs/remotes/origin/main\norigin/main\n",
        f"/r\n/r/.git\n{sha}\nrefs/heads/main\nmain",
        "",
    ]
    assert [parse_start(out) for out in refused] == [None] * len(refused)
