"""Where a new worktree starts, checked before anything is made.

The checks are asked of git at once: one ``rev-parse`` for the repository, the
base's commit, the current branch and the agent's directory of refs, while the
configuration's drivers are looked up and, when starting from the current branch,
``git status`` looks for uncommitted changes with them blanked. Only when that
says something is wrong are the checks made again one by one, to say which.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from agentdeck.core.worktree import Start, dirty, own_namespace, parse_start, start_query
from agentdeck.errors import WorktreeError
from agentdeck.worktrees.git import Blanked, GitFailed, blanked_drivers, git

_STATUS = ("status", "--porcelain", "-z", "-uno")


@dataclass(frozen=True)
class Checked:
    """A worktree may start here: from ``commit``, which ``base`` names."""

    top: str
    git_dir: str
    base: str
    commit: str
    blanked: Blanked  # the repository's drivers, for ``git worktree add``


async def start_of(repo_dir: Path, base: str | None, branch: str) -> Checked:
    """Where a worktree of the repository ``repo_dir`` is in starts, on the new
    ``branch``, from ``base`` (default: the current branch, which must have no
    uncommitted changes); ``WorktreeError`` saying why it cannot."""
    namespace = own_namespace(branch) or branch

    async def refs() -> Start | None:
        try:
            return parse_start(await git(*start_query(base, namespace), cwd=repo_dir))
        except GitFailed:
            return None

    async def changes() -> tuple[Blanked, list[str] | None]:
        blanked = await blanked_drivers(repo_dir)
        if base is not None:
            return blanked, []
        try:
            return blanked, dirty(await git(*_STATUS, cwd=repo_dir, blanked=blanked))
        except GitFailed:
            return blanked, None

    async with asyncio.TaskGroup() as group:
        asked = group.create_task(refs())
        looked = group.create_task(changes())
    start, (blanked, changed) = asked.result(), looked.result()
    if start is None or changed or changed is None or (base is None and start.head is None):
        return await refusal(repo_dir, base, branch)
    return Checked(start.top, start.git_dir, base or start.head or "", start.commit, blanked)


async def refusal(repo_dir: Path, base: str | None, branch: str) -> Checked:
    """The checks one by one: the first that fails raises ``WorktreeError``, in one
    line. (When none does, git's answer changed in between: where it starts now.)"""
    try:
        where = await git(
            "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir",
            cwd=repo_dir,
        )  # fmt: skip
        top, git_dir = where.splitlines()[:2]
    except (GitFailed, ValueError):
        raise WorktreeError(
            f"{repo_dir} is not in a git repository",
            hint="start the agent in a repository, or without --worktree",
        ) from None
    blanked = await blanked_drivers(top)
    if base is None:
        try:
            base = (await git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=top)).strip()
        except GitFailed:
            raise WorktreeError(
                f"{top} has a detached HEAD: no branch to start the worktree from",
                hint="pass --base REF",
            ) from None
        changed = dirty(await git(*_STATUS, cwd=top, blanked=blanked))
        if changed:
            shown = ", ".join(changed[:3]) + (", …" if len(changed) > 3 else "")
            raise WorktreeError(
                f"{top} has uncommitted changes ({shown}): the worktree starts from the "
                f"last commit of {base} and would not have them",
                hint=f"commit or stash them, or pass --base {base} to start without them",
            )
    try:
        commit = await git("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", cwd=top)
    except GitFailed:
        raise WorktreeError(
            f"{top} has no commit {base!r}", hint="pass an existing --base"
        ) from None
    namespace = own_namespace(branch) or branch
    taken = await git(
        "for-each-ref", "--format=%(refname)", f"refs/heads/{namespace}",
        f"refs/heads/{namespace}/", cwd=top,
    )  # fmt: skip
    if taken.strip():
        raise WorktreeError(
            f"branch {taken.split()[0].removeprefix('refs/heads/')} already exists in {top}",
            hint="name the agent differently",
        )
    return Checked(top, git_dir, base, commit.strip(), blanked)
