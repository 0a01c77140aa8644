"""A test-gated merge of an agent's branch: combined with the *latest* target in a
scratch worktree, tested there, and the target moved to exactly that tested commit.

One merge at a time per repository (a lock file in its git directory, across
processes). The target moves by compare-and-swap: if it moved meanwhile, the merge
is combined and tested again on the new tip, so no untested commit ever lands. A
target checked out in a working tree is fast-forwarded there (its files follow); a
change there that the merge would overwrite refuses it.

The test runs as the agent's own commands do (``merge_test``): in the sandbox its
caller gives (``confine``), with a deadline, its output scrubbed of secrets. What a
process that died mid-merge left (a test still running, a scratch worktree) is
cleared by the next merge of the repository before it begins.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.core.event_scrub import CUT_MARGIN
from agentdeck.core.merge_queue import guarded, guarded_reason
from agentdeck.core.redact import scrub
from agentdeck.core.worktree import STRATEGIES, Strategy, Worktree
from agentdeck.errors import SandboxUnavailable, WorktreeError
from agentdeck.worktrees import merge_test
from agentdeck.worktrees.git import AS_AGENTDECK, GitFailed, git
from agentdeck.worktrees.merge_test import Jail
from agentdeck.worktrees.objects import take_in

ATTEMPTS = 5  # how often the target may move under a merge before it gives up
TAIL = 4000  # characters of a failing test's output kept
# Where a merge's test runs, given its scratch worktree: a sandbox (or None: as
# this process, for a profile without one). Raises SandboxUnavailable for a
# sandbox that is required and cannot be given.
Confine = Callable[[Path], AbstractAsyncContextManager[Jail | None]]


@contextlib.asynccontextmanager
async def unconfined(_scratch: Path) -> AsyncIterator[Jail | None]:
    yield None


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
    confine: Confine = unconfined,
    hide: Sequence[str] = (),
) -> MergeOutcome:
    """Land the worktree's branch on ``into`` (default: the branch it started from).

    ``test``: a person's command (default: the target's ``.agentdeck/merge.yaml``),
    run where ``confine`` says; ``hide``: secrets to blank out of its output
    besides those the scrubber finds by shape (the deck's token)."""
    if strategy not in STRATEGIES:
        raise WorktreeError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    repo, branch = worktree.repo, worktree.branch
    target = into or worktree.base
    await check_target(repo, target)
    git_dir = Path(worktree.git_dir)
    async with _merge_lock(git_dir):
        await _clear_leftover(repo, git_dir / merge_test.RECORD)
        # What the agent committed in its own object directory, verified into the
        # repository's store: the merge reads its branch there.
        await take_in(worktree)
        run = _Run(git_dir / merge_test.RECORD, test_timeout, confine, tuple(hide))
        outcome = MergeOutcome(False, branch, target, strategy, "")
        for attempt in range(1, ATTEMPTS + 1):
            tip = (await git("rev-parse", f"refs/heads/{target}", cwd=repo)).strip()
            ahead = await git("rev-list", "--count", f"{tip}..{branch}", cwd=repo)
            if int(ahead.strip() or 0) == 0:
                return MergeOutcome(
                    False, branch, target, strategy,
                    f"nothing to merge: {target} already has every commit of {branch}",
                )  # fmt: skip
            changed = await git("diff", "--name-only", "-z", f"{tip}...{branch}", cwd=repo)
            touched = guarded([p for p in changed.split("\0") if p])
            if touched:
                return MergeOutcome(
                    False, branch, target, strategy, guarded_reason(branch, touched, repo)
                )
            command = test if test is not None else await _configured_test(repo, tip)
            outcome = await _attempt(
                repo, branch, target, tip, strategy, command, scratch, run,
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


@dataclass(frozen=True)
class _Run:
    """How a merge runs its test."""

    record: Path  # beside the merge lock: what a crash would leave
    timeout: float
    confine: Confine
    hide: tuple[str, ...]

    async def test(self, command: str, scratch: Path) -> merge_test.TestRun:
        async with self.confine(scratch) as jail:
            ran = await merge_test.run_test(
                command, scratch, self.timeout, jail=jail, record=self.record
            )
        return merge_test.TestRun(ran.passed, await asyncio.to_thread(self.clean, ran.output))

    def clean(self, output: str) -> str:
        """The tail of a test's output, scrubbed like the event log (scrubbed past
        the cut, so the cut never leaves a piece of a secret the rules miss)."""
        text = scrub(output[-(TAIL + CUT_MARGIN) :])
        for secret in self.hide:
            if len(secret) >= 8:
                text = text.replace(secret, "[REDACTED:agentdeck]")
        return text[-TAIL:]


async def _attempt(
    repo: str, branch: str, target: str, tip: str, strategy: Strategy, test: str | None,
    scratch_root: Path, run: _Run, message: str,
) -> MergeOutcome:  # fmt: skip
    if strategy == "merge" and not test:
        return await _attempt_in_place(repo, branch, target, tip, message)
    scratch = scratch_root / f"merge-{uuid.uuid4().hex[:12]}"
    scratch_root.mkdir(parents=True, exist_ok=True)
    merge_test.note_scratch(run.record, scratch)
    try:
        await git("worktree", "add", "--quiet", "--detach", str(scratch), tip, cwd=repo)
        conflicts = await _combine(scratch, branch, tip, strategy, message)
        if conflicts:
            return MergeOutcome(
                False, branch, target, strategy,
                f"conflicts with {target} in {', '.join(conflicts)}", conflicts=conflicts,
            )  # fmt: skip
        if test:
            try:
                ran = await run.test(test, scratch)
            except SandboxUnavailable as exc:
                return MergeOutcome(
                    False, branch, target, strategy,
                    f"not tested, so not merged: {exc.message}", test=test,
                )  # fmt: skip
            if not ran.passed:
                return MergeOutcome(
                    False, branch, target, strategy,
                    f"tests failed on {branch} combined with {target}: {test}",
                    test=test, test_output=ran.output,
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
        await asyncio.shield(_remove_scratch(repo, scratch))
        merge_test.forget(run.record)


async def _remove_scratch(repo: str, scratch: Path) -> None:
    with contextlib.suppress(GitFailed):
        await git("worktree", "remove", "--force", str(scratch), cwd=repo)
    if scratch.exists():  # not (or no longer) a worktree git knows
        await asyncio.to_thread(shutil.rmtree, scratch, True)
        with contextlib.suppress(GitFailed):
            await git("worktree", "prune", cwd=repo)


async def clear_leftover(repo: str) -> None:
    """What a process that died mid-merge in ``repo`` left, cleared now (a daemon
    at its start, for merges it may not be able to take again)."""
    try:
        common = (await git("rev-parse", "--git-common-dir", cwd=repo)).strip()
    except (WorktreeError, OSError):
        return  # the repository is gone, and what was in it
    git_dir = Path(repo, common).resolve()
    if (git_dir / merge_test.RECORD).exists():
        async with _merge_lock(git_dir):
            await _clear_leftover(repo, git_dir / merge_test.RECORD)


async def _clear_leftover(repo: str, record: Path) -> None:
    """What a process that died mid-merge left: its test killed, its scratch
    worktree removed (this process holds the lock that process held)."""
    _killed, scratch = await asyncio.to_thread(merge_test.leftover, record)
    if scratch is not None:
        await _remove_scratch(repo, scratch)
    merge_test.forget(record)


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
