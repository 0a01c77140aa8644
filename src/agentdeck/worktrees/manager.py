"""Worktrees for agents, under ``AGENTDECK_HOME/worktrees/<agent id>``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from agentdeck.core.agent import Agent
from agentdeck.core.worktree import (
    FileChange,
    Worktree,
    branch_name,
    dirty,
    own_namespace,
    parse_numstat,
)
from agentdeck.errors import WorktreeError
from agentdeck.worktrees.admin import View, at, found, git_in, view
from agentdeck.worktrees.git import AS_AGENTDECK, GitFailed, git
from agentdeck.worktrees.objects import take_in
from agentdeck.worktrees.start import refusal, start_of

# Nested repositories are the agent's: nothing of theirs is looked at.
_STATUS = ("status", "--porcelain", "-z", "--ignore-submodules=dirty")
# A diff as git computes it, never through a program the configuration names.
_DIFF = ("diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")


@dataclass(frozen=True)
class Diff:
    """What an agent changed: per file, and the patch (empty when only the stat
    was asked for)."""

    against: str  # the commit the working tree is compared with
    files: list[FileChange] = field(default_factory=list)
    patch: str = ""


def worktree_of(agent: Agent) -> Worktree:
    """The agent's worktree; an agent working in a plain directory has none."""
    worktree = Worktree.from_extra(agent.extra)
    if worktree is None:
        raise WorktreeError(
            f"agent {agent.name} has no worktree (it works in {agent.cwd})",
            hint="start agents with --worktree to review what they change",
        )
    return worktree


class Worktrees:
    def __init__(self, root: Path) -> None:
        self.root = root

    async def create(
        self, agent_id: str, agent_name: str, repo_dir: Path, base: str | None = None
    ) -> Worktree:
        """A new worktree on a new branch from ``base`` (default: the repository's
        current branch, which must have no uncommitted changes). What git itself
        checks as it adds the worktree (the branch is new, its directory of refs
        free) is asked again only when it refuses, to say why in one line."""
        branch = branch_name(agent_name, agent_id)
        start = await start_of(repo_dir, base, branch)
        path = self.root / agent_id
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            await git(
                "worktree", "add", "--quiet", "-b", branch, str(path), start.commit,
                cwd=start.top, blanked=start.blanked,
            )  # fmt: skip
        except GitFailed:
            await refusal(repo_dir, base, branch)
            raise
        return Worktree(
            repo=start.top,
            path=str(path),
            branch=branch,
            base=start.base,
            base_commit=start.commit,
            git_dir=start.git_dir,
        )

    async def commit_wip(self, worktree: Worktree, message: str) -> str | None:
        """Commit whatever is uncommitted in the worktree (untracked files too, as
        ``.gitignore`` allows) on the agent's branch; the new commit, or None when
        nothing was. Refused when the worktree's HEAD is not on that branch (the
        agent can point it at another): the branch moves, by compare-and-swap, and
        nothing else does."""
        path = worktree.path
        where = await _taken_at(worktree)
        ref = f"refs/heads/{worktree.branch}"
        head = (await git_in(where, "symbolic-ref", "--quiet", "HEAD", cwd=path, ok=(0, 1))).strip()
        if head != ref:
            raise WorktreeError(
                f"the worktree's HEAD points at {head or 'a commit (detached)'}, not at the "
                f"agent's branch {worktree.branch}: nothing was committed",
                hint=f"git -C {path} symbolic-ref HEAD {ref}, once you have looked at it",
            )
        if not dirty(await git_in(where, *_STATUS, cwd=path)):
            return None
        old = (await git_in(where, "rev-parse", "--verify", f"{ref}^{{commit}}", cwd=path)).strip()
        # What `add --all` would take, without it: it looks inside nested repositories.
        changed = await git_in(
            where, "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard",
            cwd=path,
        )  # fmt: skip
        paths = dict.fromkeys(p.rstrip("/") for p in changed.split("\0") if p)
        if paths:
            await git_in(
                where, "update-index", "--add", "--remove", "-z", "--stdin", cwd=path,
                stdin=b"".join(p.encode() + b"\0" for p in paths),
            )  # fmt: skip
        tree = (await git_in(where, "write-tree", cwd=path)).strip()
        if tree == (await git_in(where, "rev-parse", f"{old}^{{tree}}", cwd=path)).strip():
            return None
        commit = (
            await git_in(where, *AS_AGENTDECK, "commit-tree", tree, "-p", old, "-m", message,
                      cwd=path)
        ).strip()  # fmt: skip
        await git_in(where, "update-ref", "-m", message, ref, commit, old, cwd=path)
        return commit

    async def diff(
        self, worktree: Worktree, *, against: str | None = None, patch: bool = True,
        color: bool = False,
    ) -> Diff:  # fmt: skip
        """The worktree as it is now (commits, uncommitted and untracked files) against
        where it started, or against where it left ``against``."""
        path = worktree.path
        if not Path(path).is_dir():
            raise WorktreeError(f"the worktree {path} is gone")
        where = await _taken_at(worktree)
        base = worktree.base_commit
        if against is not None:
            try:
                base = (await git_in(where, "merge-base", against, "HEAD", cwd=path)).strip()
            except GitFailed:
                raise WorktreeError(f"no common history with {against!r} in {path}") from None
        files = parse_numstat(await git_in(where, *_DIFF, "--numstat", "-z", base, "--", cwd=path))
        colour = "--color=always" if color else "--no-color"
        text = await git_in(where, *_DIFF, colour, base, "--", cwd=path) if patch else ""
        untracked = [
            p
            for p in (
                await git_in(where, "ls-files", "--others", "--exclude-standard", "-z", cwd=path)
            ).split("\0")
            if p
        ]
        for name in untracked:  # new files not yet added: shown as added whole
            alone = (*_DIFF, "--no-index")
            added = parse_numstat(
                await git_in(
                    where, *alone, "--numstat", "-z", "--", "/dev/null", name, cwd=path, ok=(0, 1)
                )
            )
            files += [FileChange(name, c.added, c.removed) for c in added]
            if patch:
                text += await git_in(
                    where, *alone, colour, "--", "/dev/null", name, cwd=path, ok=(0, 1)
                )
        return Diff(against=base, files=files, patch=text)


@dataclass(frozen=True)
class Standing:
    """What a worktree holds that is nowhere else."""

    worktree: Worktree
    ahead: int | None  # commits on its branch not on its base (None: the base is gone)
    behind: int | None  # commits on its base since it started
    dirty: list[str]  # files changed and not committed
    unmerged: list[str]  # "<short sha> <subject>" of commits in no other branch

    @property
    def empty(self) -> bool:
        return not self.ahead and not self.dirty and not self.unmerged

    @property
    def merged(self) -> bool:
        """Everything it holds is in another branch: removing it loses nothing."""
        return not self.dirty and not self.unmerged


async def _taken_at(worktree: Worktree) -> View:
    """git on the worktree as ``at`` names it, once what the agent committed in its
    own object directory is in the repository's store (verified): agentdeck reads
    only there."""
    await take_in(worktree)
    return await at(worktree)


async def standing(worktree: Worktree) -> Standing:
    path = worktree.path
    where = await _taken_at(worktree)
    changed = dirty(await git_in(where, *_STATUS, cwd=path))
    # Not in another branch: the agent's other refs in its own namespace do not count.
    own = own_namespace(worktree.branch)
    mine = f"--exclude={own}/*" if own else f"--exclude={worktree.branch}"
    unmerged = (
        await git_in(
            where, "log", "--format=%h %s", f"refs/heads/{worktree.branch}", "--not",
            mine, "--branches", "--remotes", cwd=path,
        )
    ).splitlines()  # fmt: skip
    ahead: int | None
    behind: int | None
    try:
        counts = await git_in(
            where, "rev-list", "--left-right", "--count", f"{worktree.base}...{worktree.branch}",
            cwd=path,
        )  # fmt: skip
        behind, ahead = (int(n) for n in counts.split())
    except (GitFailed, ValueError):
        behind = ahead = None
    return Standing(worktree, ahead, behind, changed, unmerged)


async def found_on_disk(root: Path) -> dict[str, Worktree]:
    """The worktrees under ``root`` as git describes them, by agent id (the directory's
    name): for those whose agent record is gone. Their base is unknown: where their
    branch left the repository's current branch is taken."""
    out: dict[str, Worktree] = {}
    if not root.is_dir():
        return out
    for path in sorted(p for p in root.iterdir() if (p / ".git").exists()):
        dirs = found(path)
        if dirs is None:
            continue  # its .git file, commondir or gitdir was changed: not ours to read
        common, admin = dirs
        try:
            branch = (
                await git_in(view(admin, common), "branch", "--show-current", cwd=path)
            ).strip()
            git_dir = str(common)
            repo = str(common.parent)
            head = (
                await git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=repo, ok=(0, 1))
            ).strip()
            base = head or "HEAD"
            with contextlib.suppress(WorktreeError):  # its commits, if a turn was cut short
                await take_in(Worktree(repo, str(path), branch, base, "", git_dir))
            fork = (await git("merge-base", base, branch, cwd=repo, ok=(0, 1))).strip()
        except GitFailed:
            continue
        out[path.name] = Worktree(repo, str(path), branch, base, fork, git_dir)
    return out


async def remove(worktree: Worktree, *, force: bool = False) -> None:
    """The worktree and its branch gone (``force``: even with work nowhere else).
    Whether it is clean is asked here (git's own check would look inside nested
    repositories, whose configuration is the agent's)."""
    repo = worktree.repo
    if not force:
        changed = dirty(await git_in(await _taken_at(worktree), *_STATUS, cwd=worktree.path))
        if changed:
            raise WorktreeError(
                f"{worktree.path} has changes nowhere else ({', '.join(changed[:3])})",
                hint="commit them, or remove it with --force",
            )
        await take_in(worktree)  # its branch stays if unmerged: its commits with it
    await git("worktree", "remove", "--force", worktree.path, cwd=repo)
    await git("branch", "-D" if force else "-d", worktree.branch, cwd=repo, ok=(0, 1))
