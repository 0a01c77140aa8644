"""A checkpoint shadow repository, as git: how it is configured, its last and its
n-th checkpoint, and the git steps of a snapshot and a rewind (``checkpoints``)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentdeck.core.checkpoint import Checkpoint, RewindPlan, TreeChange, parse_message
from agentdeck.errors import NotFound, WorktreeError
from agentdeck.files import atomic_write
from agentdeck.worktrees.git import git

REF = "refs/heads/checkpoints"
# Paths per git call, in bytes: well under the kernel's limit on a command line.
ARGV_BYTES = 100_000

# Written once into each shadow's config. The repository's config wins over the
# user's global one, so these hold whatever the user set there: no hooks, no signing,
# no fsmonitor daemon started on the workspace, no line-ending conversion.
CONFIG = """\
[core]
\tautocrlf = false
\tsafecrlf = false
\tuntrackedCache = false
\tpreloadIndex = true
\tfsmonitor = false
\tsplitIndex = true
\tsparseCheckout = false
\thooksPath = /dev/null
\tquotePath = false
\tlogAllRefUpdates = false
[index]
\tversion = 4
[gc]
\tauto = 0
[maintenance]
\tauto = false
[commit]
\tgpgSign = false
[user]
\tname = agentdeck
\temail = agentdeck@localhost
"""
# $GIT_DIR/info/attributes outranks the workspace's .gitattributes: files are stored
# and restored byte for byte, never through an eol conversion or a filter (git-lfs
# would otherwise be run, and fetch, on a rewind).
ATTRIBUTES = "* -text !eol -filter -ident !working-tree-encoding\n"


@dataclass(frozen=True)
class Tip:
    commit: str
    tree: str
    checkpoint: Checkpoint


# The index as a snapshot after a small change wants it, shadows made before included
# (their config said otherwise): split, so that only the changed entries are written
# (on 10,000 files, update-index and write-tree rewrote them all); no untracked cache,
# which every write of the index carried and no status of ours can use.
_INDEX = ("-c", "core.splitIndex=true", "-c", "core.untrackedCache=false")


async def run_git(
    *args: str, cwd: Path, ok: tuple[int, ...] = (0,), stdin: bytes | None = None
) -> str:
    """git on a shadow repository, whose attributes turn every driver off."""
    return await git(*_INDEX, *args, cwd=cwd, ok=ok, drivers_off=True, stdin=stdin)


def git_dir(shadow: Path) -> str:
    return f"--git-dir={shadow}"


def with_work_tree(shadow: Path, workspace: Path) -> tuple[str, str]:
    """git on the shadow repository, with the workspace as its work tree."""
    return f"--git-dir={shadow}", f"--work-tree={workspace}"


async def read_tip(shadow: Path) -> Tip | None:
    """The latest checkpoint, with its commit and tree; None before the first."""
    out = await run_git(
        git_dir(shadow), "for-each-ref", "--format=%(objectname) %(tree)%00%(contents)", REF,
        cwd=shadow,
    )  # fmt: skip
    if not out.strip():
        return None
    head, _, message = out.partition("\0")
    commit, tree = head.split()
    checkpoint = parse_message(commit, message)
    if checkpoint is None:
        raise WorktreeError(
            f"the checkpoints in {shadow} are damaged: {commit} is not one",
            hint="delete that directory to start the agent's checkpoints afresh",
        )
    return Tip(commit, tree, checkpoint)


async def find_checkpoint(shadow: Path, agent_id: str, tip: Tip | None, n: int) -> Tip:
    """Checkpoint ``n``: the one ``last - n`` commits behind the last."""
    if tip is None or not 1 <= n <= tip.checkpoint.n:
        known = f"it has checkpoints 1 to {tip.checkpoint.n}" if tip else "it has none yet"
        raise NotFound(f"checkpoint of agent {agent_id}", str(n), hint=known)
    out = await run_git(
        git_dir(shadow), "log", "-1", "--format=%H%x00%T%x00%B",
        f"{tip.commit}~{tip.checkpoint.n - n}", cwd=shadow,
    )  # fmt: skip
    commit, tree, message = out.split("\0", 2)
    checkpoint = parse_message(commit, message)
    if checkpoint is None or checkpoint.n != n:
        raise WorktreeError(
            f"the checkpoints in {shadow} are damaged: checkpoint {n} is not where it should be",
            hint="delete that directory to start the agent's checkpoints afresh",
        )
    return Tip(commit, tree, checkpoint)


def measure(workspace: Path, paths: list[str], cap: int) -> tuple[list[str], list[str], list[str]]:
    """``paths`` sorted into those to take, those too large (or unreadable) to, and
    those gone since ``status`` named them."""
    take: list[str] = []
    skipped: list[str] = []
    vanished: list[str] = []
    for path in paths:
        try:
            info = (workspace / path).lstat()
        except (FileNotFoundError, NotADirectoryError):
            vanished.append(path)
            continue
        except OSError:
            skipped.append(path)
            continue
        if stat.S_ISREG(info.st_mode) and (info.st_size > cap or not _readable(workspace / path)):
            skipped.append(path)
        else:
            take.append(path)
    return take, skipped, vanished


def _readable(path: Path) -> bool:
    try:
        with path.open("rb"):
            return True
    except OSError:
        return False


def chunks(paths: list[str], budget: int = ARGV_BYTES) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for path in paths:
        length = len(path.encode()) + 1
        if chunk and size + length > budget:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += length
    if chunk:
        yield chunk


def pathspec(changed: set[str] | None) -> list[str] | None:
    """The paths to ask git about, sorted; None: all of them (too many to name, or a
    .gitignore changed: what it ignores anywhere may have changed with it)."""
    if changed is None or sum(len(p.encode()) + 1 for p in changed) > ARGV_BYTES:
        return None
    if any(is_gitignore(p) for p in changed):
        return None
    return sorted(changed)


def under(path: str, looked: set[str]) -> bool:
    """Whether ``path`` is one of ``looked`` or inside one of them."""
    parts = path.split("/")
    return any("/".join(parts[:i]) in looked for i in range(1, len(parts) + 1))


def put_back_index(index: Path, saved: bytes | None) -> None:
    if saved is None:
        index.unlink(missing_ok=True)
        return
    atomic_write(index, saved)


def is_gitignore(path: str) -> bool:
    return path == ".gitignore" or path.endswith("/.gitignore")


async def checkout_files(shadow: Path, workspace: Path, restore: list[TreeChange]) -> None:
    """The checkpoint's version of each file into the shadow's index, then onto disk:
    ``checkout-index`` writes exactly these paths and nothing else."""
    if not restore:
        return
    where = with_work_tree(shadow, workspace)
    infos = [f"{c.new_mode},{c.new_object},{c.path}" for c in restore]
    for chunk in chunks(infos):
        cacheinfo = [arg for info in chunk for arg in ("--cacheinfo", info)]
        await run_git(*where, "update-index", "--add", "--replace", *cacheinfo, cwd=workspace)
    for chunk in chunks([c.path for c in restore]):
        await run_git(*where, "checkout-index", "--force", "--index", "--", *chunk, cwd=workspace)


async def rewind_patch(
    shadow: Path, now: str, then: str, plan: RewindPlan, blocked: list[str]
) -> str:
    """What the rewind would change, as a patch from now to the checkpoint."""
    diff = (
        git_dir(shadow), "diff-tree", "-p", "-r", "--no-renames", "--no-color", "--no-ext-diff",
        "--no-textconv", now, then,
    )  # fmt: skip
    if not plan.kept and not blocked:
        return await run_git(*diff, cwd=shadow)
    paths = [*(c.path for c in plan.restore if c.path not in blocked), *plan.remove]
    parts = [
        await run_git("--literal-pathspecs", *diff, "--", *chunk, cwd=shadow)
        for chunk in chunks(sorted(paths))
    ]
    return "".join(parts)
