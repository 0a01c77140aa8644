"""A worktree's own object directory, on real repositories and without a sandbox:
git that follows the worktree's .git file commits there; agentdeck reads the
repository's objects first, and takes the agent's commits in verified, never
one whose content is not what its name says, never through a link."""

from __future__ import annotations

import hashlib
import subprocess
import zlib
from pathlib import Path

import pytest

from agentdeck.core.worktree import OWN_COMMON, OWN_OBJECTS, Worktree
from agentdeck.errors import WorktreeError
from agentdeck.worktrees import Worktrees, found_on_disk, standing
from agentdeck.worktrees.admin import confine
from agentdeck.worktrees.manager import remove
from agentdeck.worktrees.objects import take_in
from tests.worktrees.conftest import git

pytestmark = pytest.mark.anyio

AGENT = "a1b2c3d4e5f6a7b9"


@pytest.fixture
def trees(tmp_path: Path) -> Worktrees:
    return Worktrees(tmp_path / "home" / "worktrees")


async def confined(trees: Worktrees, repo: Path) -> tuple[Worktree, Path, Path]:
    """A worktree as a sandboxed agent's starts: its own objects and common dir."""
    wt = await trees.create(AGENT, "w", repo)
    await confine(wt)
    admin = repo / ".git" / "worktrees" / AGENT
    return wt, admin, admin / OWN_OBJECTS


def loose(objects: Path, name: str) -> Path:
    return objects / name[:2] / name[2:]


def has(repo: Path, name: str) -> bool:
    done = subprocess.run(["git", "cat-file", "-e", name], cwd=repo, check=False)
    return done.returncode == 0


async def test_a_commit_in_the_worktree_lands_in_its_own_objects_and_is_taken_in(
    repo: Path, trees: Worktrees
) -> None:
    wt, admin, own = await confined(trees, repo)
    work = Path(wt.path)
    assert (admin / "commondir").read_text() == f"{OWN_COMMON}\n"
    (work / "new.txt").write_text("new\n")
    git(work, "add", "new.txt")
    git(work, "commit", "-q", "-m", "its own")
    tip = git(work, "rev-parse", "HEAD").strip()
    assert loose(own, tip).is_file() and not has(repo, tip)
    assert await take_in(wt) == 3  # the commit, its tree, the new blob
    assert git(repo, "log", "--format=%s", wt.branch).splitlines() == ["its own", "initial"]
    # agentdeck reads only the repository's store: its diff and standing take in first.
    (work / "newer.txt").write_text("newer\n")
    git(work, "add", "newer.txt")
    git(work, "commit", "-q", "-m", "its next")
    newer = git(work, "rev-parse", "HEAD").strip()
    assert not has(repo, newer)
    assert [f.path for f in (await trees.diff(wt)).files] == ["new.txt", "newer.txt"]
    assert has(repo, newer)
    assert (await standing(wt)).ahead == 2
    git(repo, "fsck", "--strict", "--no-dangling")
    assert not loose(own, tip).exists()  # the repository holds it now: its copy goes
    assert not loose(own, newer).exists()
    assert await take_in(wt) == 0
    # ... and its next commit, by agentdeck, goes straight into the repository's.
    (work / "more.txt").write_text("more\n")
    commit = await trees.commit_wip(wt, "wip")
    assert commit is not None and has(repo, commit)


async def test_a_worktree_made_before_is_converted_and_nested_repositories_are_left_alone(
    repo: Path, trees: Worktrees
) -> None:
    wt = await trees.create(AGENT, "w", repo)
    work = Path(wt.path)
    nested = work / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "n.txt").write_text("n\n")
    git(nested, "add", "n.txt")
    git(nested, "commit", "-q", "-m", "nested")
    await confine(wt)
    await confine(wt)  # again at each start: the same
    (nested / "m.txt").write_text("m\n")
    git(nested, "add", "m.txt")
    git(nested, "commit", "-q", "-m", "nested again")
    git(work, "clone", "-q", "nested", "cloned")
    # The nested repository and its clone keep their own objects.
    own = repo / ".git" / "worktrees" / AGENT / OWN_OBJECTS
    assert not any(p.is_dir() and len(p.name) == 2 for p in own.iterdir())
    git(nested, "fsck", "--strict")
    assert git(work / "cloned", "log", "--format=%s").splitlines() == ["nested again", "nested"]


async def test_an_object_that_is_not_what_its_name_says_is_never_taken_in(
    repo: Path, trees: Worktrees
) -> None:
    wt, _admin, own = await confined(trees, repo)
    work = Path(wt.path)
    main = git(repo, "rev-parse", "main")
    (work / "new.txt").write_text("honest\n")
    git(work, "add", "new.txt")
    git(work, "commit", "-q", "-m", "forged")
    blob = git(work, "rev-parse", "HEAD:new.txt").strip()
    loose(own, blob).chmod(0o644)
    loose(own, blob).write_bytes(zlib.compress(b"blob 5\0EVIL\n"))

    with pytest.raises(WorktreeError, match="could not be taken into the repository"):
        await take_in(wt)
    assert not has(repo, blob)
    assert not has(repo, git(work, "rev-parse", "HEAD").strip())
    assert git(repo, "rev-parse", "main") == main
    git(repo, "fsck", "--no-dangling", "main")


async def test_a_shadow_of_a_repository_object_is_never_read_by_agentdeck_and_goes(
    repo: Path, trees: Worktrees
) -> None:
    wt, _admin, own = await confined(trees, repo)
    blob = git(repo, "rev-parse", "main:calc.py").strip()
    shadow = loose(own, blob)
    shadow.parent.mkdir()
    shadow.write_bytes(zlib.compress(b"blob 5\0EVIL\n"))
    work = Path(wt.path)
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")

    diff = await trees.diff(wt)
    assert "-    return a - b" in diff.patch and "EVIL" not in diff.patch
    assert await trees.commit_wip(wt, "wip") is not None
    await take_in(wt)
    assert not shadow.exists()
    assert git(repo, "show", "main:calc.py").endswith("a - b\n")


async def test_a_link_in_its_object_directory_is_never_followed(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt, _admin, own = await confined(trees, repo)
    blob = git(repo, "rev-parse", "main:calc.py").strip()
    # Its xx directory a link to the repository's: agentdeck removes no object there.
    (own / blob[:2]).symlink_to(repo / ".git" / "objects" / blob[:2])
    # A loose object a link to a file it cannot read itself: never copied in.
    elsewhere = tmp_path / "elsewhere"
    secret = zlib.compress(b"blob 7\0secret\n")
    elsewhere.write_bytes(secret)
    name = hashlib.sha1(b"blob 7\0secret\n").hexdigest()
    (own / name[:2]).mkdir(exist_ok=True)
    loose(own, name).symlink_to(elsewhere)
    work = Path(wt.path)
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{name},secret.txt")
    git(work, "commit", "-q", "-m", "its git follows the link")

    with pytest.raises(WorktreeError):
        await take_in(wt)
    assert not has(repo, name)
    assert has(repo, blob) and loose(repo / ".git" / "objects", blob).is_file()


async def test_a_worktree_is_taken_in_before_it_is_removed_or_listed_without_its_record(
    repo: Path, trees: Worktrees
) -> None:
    wt, _admin, _own = await confined(trees, repo)
    work = Path(wt.path)
    (work / "kept.txt").write_text("kept\n")
    git(work, "add", "kept.txt")
    git(work, "commit", "-q", "-m", "kept")
    found = await found_on_disk(trees.root)
    assert found[AGENT].branch == wt.branch
    assert git(repo, "log", "-1", "--format=%s", wt.branch) == "kept\n"
    (work / "later.txt").write_text("later\n")
    git(work, "add", "later.txt")
    git(work, "commit", "-q", "-m", "later")
    await remove(wt)  # unmerged: the branch stays, with its commits
    assert git(repo, "log", "-1", "--format=%s", wt.branch) == "later\n"
    git(repo, "fsck", "--strict", "--no-dangling")


async def test_a_commondir_naming_anything_else_is_refused(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    wt, admin, _own = await confined(trees, repo)
    (admin / "commondir").write_text(f"{tmp_path}\n")
    with pytest.raises(WorktreeError, match="commondir"):
        await take_in(wt)
    with pytest.raises(WorktreeError, match="commondir"):
        await trees.diff(wt)


async def test_a_link_in_its_objects_never_shows_agentdeck_a_file_it_cannot_read(
    repo: Path, trees: Worktrees, tmp_path: Path
) -> None:
    """The agent links a name its commit needs to an object file elsewhere (one it
    could not read in its sandbox): agentdeck's diff never reads through it."""
    wt, _admin, own = await confined(trees, repo)
    work = Path(wt.path)
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", str(elsewhere))
    (elsewhere / "secret.txt").write_text("SECRET-CONTENT\n")
    blob = git(elsewhere, "hash-object", "-w", "secret.txt").strip()
    target = loose(own, blob)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(loose(elsewhere / ".git" / "objects", blob))
    git(work, "update-index", "--add", "--cacheinfo", f"100644,{blob},leak.txt")
    git(work, "commit", "-q", "-m", "a leak")
    with pytest.raises(WorktreeError) as refused:
        await trees.diff(wt)
    assert "SECRET-CONTENT" not in str(refused.value)
    assert not has(repo, blob)
