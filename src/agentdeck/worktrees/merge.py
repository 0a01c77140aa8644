"""A test-gated merge of an agent's branch: combined with the *latest* target in a
scratch worktree, tested there, and the target moved to exactly that tested commit.

One merge at a time per repository (a lock file in its git directory, across
processes). The target moves by compare-and-swap: if it moved meanwhile, the merge
is combined and tested again on the new tip, so no untested commit ever lands. A
target checked out in a working tree is fast-forwarded there (its files follow); a
change there that the merge would overwrite refuses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.core.worktree import STRATEGIES, Strategy, Worktree
from agentdeck.errors import WorktreeError
from agentdeck.worktrees.git import AS_AGENTDECK, GitFailed, git

ATTEMPTS = 5  # how often the target may move under a merge before it gives up
TAIL = 4000  # characters of a failing test's output kept


@dataclass(frozen=True)
class MergeOutcome:
    landed: bool
    branch: str
    target: str
    strategy: str
    reason: str  # what happened, in one line
    commit: str | None = None  # the tested commit the target now points at
    conflicts: list[str] = field(default_factory=list)
    test: str | None = None
    test_output: str = ""  # the tail of a failing test's output
    attempts: int = 1

    def to_dict(self) -> dict[str, object]:
        return {
            "landed": self.landed, "branch": self.branch, "target": self.target,
            "strategy": self.strategy, "reason": self.reason, "commit": self.commit,
            "conflicts": self.conflicts, "test": self.test, "test_output": self.test_output,
            "attempts": self.attempts,
        }  # fmt: skip


async def merge(
    worktree: Worktree,
    *,
    scratch: Path,
    into: str | None = None,
    strategy: Strategy = "merge",
    test: str | None = None,
    test_timeout: float = 600.0,
    message: str | None = None,
) -> MergeOutcome:
    """Land the worktree's branch on ``into`` (default: the branch it started from)."""
    if strategy not in STRATEGIES:
        raise WorktreeError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    repo, branch = worktree.repo, worktree.branch
    target = into or worktree.base
    await check_target(repo, target)
    async with _merge_lock(Path(worktree.git_dir)):
        outcome = MergeOutcome(False, branch, target, strategy, "")
        for attempt in range(1, ATTEMPTS + 1):
            tip = (await git("rev-parse", f"refs/heads/{target}", cwd=repo)).strip()
            ahead = await git("rev-list", "--count", f"{tip}..{branch}", cwd=repo)
            if int(ahead.strip() or 0) == 0:
                return MergeOutcome(
                    False, branch, target, strategy,
                    f"nothing to merge: {target} already has every commit of {branch}",
                )  # fmt: skip
            command = test if test is not None else await _configured_test(repo, tip)
            outcome = await _attempt(
                repo, branch, target, tip, strategy, command, scratch, test_timeout,
                message or f"Merge {branch} into {target}",
            )  # fmt: skip
            outcome = MergeOutcome(**{**outcome.__dict__, "attempts": attempt})
            if outcome.landed or outcome.reason != "moved":
                return outcome
        return MergeOutcome(
            False, branch, target, strategy,
            f"{target} kept moving: {ATTEMPTS} attempts, each tested and overtaken",
            attempts=ATTEMPTS,
        )  # fmt: skip


async def check_target(repo: str, target: str) -> None:
    """A merge needs a branch to land on."""
    if not (
        await git("rev-parse", "--verify", "--quiet", f"refs/heads/{target}", cwd=repo, ok=(0, 1))
    ).strip():
        raise WorktreeError(
            f"{repo} has no branch {target!r} to merge into", hint="pass --into BRANCH"
        )


async def _attempt_in_place(
    repo: str, branch: str, target: str, tip: str, message: str
) -> MergeOutcome:
    """A merge with no test to run needs no checkout: ``git merge-tree`` combines the
    trees in the object database, ``commit-tree`` makes the merge commit."""
    out = await git("merge-tree", "--write-tree", "--name-only", tip, branch, cwd=repo, ok=(0, 1))
    tree, _, rest = out.partition("\n")
    conflicts = rest.split("\n\n", 1)[0].split() if rest.strip() else []
    if conflicts:
        return MergeOutcome(
            False, branch, target, "merge",
            f"conflicts with {target} in {', '.join(conflicts)}", conflicts=conflicts,
        )  # fmt: skip
    commit = await git(
        *AS_AGENTDECK, "commit-tree", tree.strip(), "-p", tip, "-p", branch, "-m", message,
        cwd=repo,
    )  # fmt: skip
    tested = commit.strip()
    moved = await _advance(repo, target, tip, tested)
    if moved is not None:
        return MergeOutcome(False, branch, target, "merge", moved)
    return MergeOutcome(
        True, branch, target, "merge", f"landed on {target} as {tested[:12]}", commit=tested
    )


async def _attempt(
    repo: str, branch: str, target: str, tip: str, strategy: Strategy, test: str | None,
    scratch_root: Path, timeout: float, message: str,
) -> MergeOutcome:  # fmt: skip
    if strategy == "merge" and not test:
        return await _attempt_in_place(repo, branch, target, tip, message)
    scratch = scratch_root / f"merge-{uuid.uuid4().hex[:12]}"
    scratch_root.mkdir(parents=True, exist_ok=True)
    await git("worktree", "add", "--quiet", "--detach", str(scratch), tip, cwd=repo)
    try:
        conflicts = await _combine(scratch, branch, tip, strategy, message)
        if conflicts:
            return MergeOutcome(
                False, branch, target, strategy,
                f"conflicts with {target} in {', '.join(conflicts)}", conflicts=conflicts,
            )  # fmt: skip
        if test:
            passed, output = await _run_test(test, scratch, timeout)
            if not passed:
                return MergeOutcome(
                    False, branch, target, strategy,
                    f"tests failed on {branch} combined with {target}: {test}",
                    test=test, test_output=output[-TAIL:],
                )  # fmt: skip
        tested = (await git("rev-parse", "HEAD", cwd=scratch)).strip()
        moved = await _advance(repo, target, tip, tested)
        if moved is not None:
            return MergeOutcome(False, branch, target, strategy, moved)
        return MergeOutcome(
            True, branch, target, strategy,
            f"landed on {target} as {tested[:12]}" + (f", tests passed: {test}" if test else ""),
            commit=tested, test=test,
        )  # fmt: skip
    finally:
        with contextlib.suppress(GitFailed):
            await git("worktree", "remove", "--force", str(scratch), cwd=repo)


async def _combine(
    scratch: Path, branch: str, tip: str, strategy: Strategy, message: str
) -> list[str]:
    """The branch combined with the target in the scratch worktree: its conflicts."""
    step: tuple[str, ...]
    abort: tuple[str, ...]
    if strategy == "rebase":
        await git("checkout", "--quiet", "--detach", branch, cwd=scratch)
        step = ("rebase", "--quiet", tip)
        abort = ("rebase", "--abort")
    elif strategy == "squash":
        step = ("merge", "--squash", "--quiet", branch)
        abort = ("reset", "--hard", "--quiet", tip)
    else:
        step = ("merge", "--no-ff", "--quiet", "-m", message, branch)
        abort = ("merge", "--abort")
    try:
        await git(*AS_AGENTDECK, *step, cwd=scratch)
    except GitFailed:
        unmerged = await git("diff", "--name-only", "--diff-filter=U", cwd=scratch)
        with contextlib.suppress(GitFailed):
            await git(*abort, cwd=scratch)
        conflicts = unmerged.split()
        if not conflicts:
            raise
        return conflicts
    if strategy == "squash":
        await git(*AS_AGENTDECK, "commit", "--quiet", "--no-verify", "-m", message, cwd=scratch)
    return []


async def _run_test(command: str, cwd: Path, timeout: float) -> tuple[bool, str]:
    proc = await asyncio.create_subprocess_shell(
        command, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return False, f"(the test command ran past {timeout:g} s and was killed)"
    except asyncio.CancelledError:  # the merge was stopped: so are its tests
        _kill(proc.pid)
        raise
    return proc.returncode == 0, out.decode("utf-8", "replace")


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


async def _advance(repo: str, target: str, old: str, tested: str) -> str | None:
    """Move ``target`` from ``old`` to ``tested``; None if it moved, else why not
    (``"moved"``: the target is no longer at ``old``; try again)."""
    checked_out = await _checked_out(repo, target)
    if checked_out is None:
        try:
            await git("update-ref", f"refs/heads/{target}", tested, old, cwd=repo)
        except GitFailed:
            return "moved"
        return None
    head = (await git("rev-parse", "HEAD", cwd=checked_out)).strip()
    if head != old:
        return "moved"
    try:
        await git("merge", "--ff-only", "--quiet", tested, cwd=checked_out)
    except GitFailed as exc:
        return (
            f"{target} is checked out at {checked_out}, whose changes the merge would "
            f"overwrite ({exc.message})"
        )
    return None


async def _checked_out(repo: str, branch: str) -> str | None:
    """The working tree that has ``branch`` checked out, if any."""
    path = None
    for line in (await git("worktree", "list", "--porcelain", cwd=repo)).splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree ") :]
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


async def _configured_test(repo: str, tip: str) -> str | None:
    """``test`` of ``.agentdeck/merge.yaml`` as the target has it (never as the branch
    has it: a branch must not choose its own gate)."""
    try:
        text = await git("show", f"{tip}:.agentdeck/merge.yaml", cwd=repo)
    except GitFailed:
        return None
    import yaml  # only a repository with a gate pays for it

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise WorktreeError(f"{repo}/.agentdeck/merge.yaml: {exc}") from None
    test = data.get("test") if isinstance(data, dict) else None
    if test is not None and not isinstance(test, str):
        raise WorktreeError(f"{repo}/.agentdeck/merge.yaml: test must be a command line")
    return test


@contextlib.asynccontextmanager
async def _merge_lock(git_dir: Path) -> AsyncIterator[None]:
    """One merge at a time per repository, across processes."""
    fd = os.open(git_dir / "agentdeck-merge.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
