"""Checkpoints of agents' workspaces, and rewinds to them.

Each agent has a shadow repository at ``AGENTDECK_HOME/checkpoints/<agent id>``: a
bare git directory whose work tree, given on every call, is the agent's workspace.
Its objects, refs and index are its own, so the workspace's repository (when it has
one) is never read or written, and nothing is written inside the workspace. One
commit per checkpoint on ``refs/heads/checkpoints``, the checkpoint itself as JSON
in the message (``core.checkpoint``). The index is kept between snapshots: git then
re-reads only the files whose stat changed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentdeck.core.checkpoint import (
    ChangedFile,
    Checkpoint,
    Rewind,
    RewindPlan,
    TreeChange,
    exclude_pattern,
    format_message,
    parse_message,
    parse_name_status,
    parse_raw,
    parse_status,
    plan_rewind,
    unquote,
)
from agentdeck.errors import NotFound, UsageError, WorktreeError
from agentdeck.worktrees.git import AS_AGENTDECK, git
from agentdeck.worktrees.workspace_files import remove_files, unblocked

logger = logging.getLogger(__name__)

REF = "refs/heads/checkpoints"
_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# Paths per git call, in bytes: well under the kernel's limit on a command line.
_ARGV_BYTES = 100_000
# An index.lock older than this was left by a git that died: no git of ours runs longer.
_STALE_LOCK_SECONDS = 120

# Written once into each shadow's config. The repository's config wins over the
# user's global one, so these hold whatever the user set there: no hooks, no signing,
# no fsmonitor daemon started on the workspace, no line-ending conversion.
_CONFIG = """\
[core]
\tautocrlf = false
\tsafecrlf = false
\tuntrackedCache = true
\tpreloadIndex = true
\tfsmonitor = false
\tsplitIndex = false
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
_ATTRIBUTES = "* -text !eol -filter -ident !working-tree-encoding\n"


@dataclass(frozen=True)
class _Taken:
    """The workspace as written into the shadow's index."""

    tree: str
    skipped: list[str]  # not taken: over the size cap, or unreadable


@dataclass(frozen=True)
class _Tip:
    commit: str
    tree: str
    checkpoint: Checkpoint


class Checkpoints:
    """Shadow repositories under ``root`` (``AGENTDECK_HOME/checkpoints``). Files over
    ``max_file_bytes`` are not snapshotted, and rewinds leave them alone."""

    def __init__(self, root: Path, max_file_bytes: int = 10 * 1024 * 1024) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        # One snapshot or rewind of an agent at a time: they share its index.
        self._locks: dict[str, asyncio.Lock] = {}
        self._excluded: set[tuple[Path, Path]] = set()

    def shadow(self, agent_id: str) -> Path:
        """The agent's shadow repository (which may not exist yet)."""
        if not _AGENT_ID.fullmatch(agent_id):
            raise UsageError(f"{agent_id!r} cannot name a checkpoint repository")
        return self.root / agent_id

    async def snapshot(
        self,
        agent_id: str,
        workspace: Path,
        *,
        tool: str | None = None,
        tool_use_id: str | None = None,
        summary: str = "",
    ) -> Checkpoint:
        """The workspace as it is now, as the agent's next checkpoint. One is made even
        when nothing changed, so that every tool call is on the timeline."""
        async with self._lock(agent_id):
            workspace = _workspace(workspace)
            shadow = await self._open(agent_id, workspace)
            taken = await self._take(shadow, workspace)
            return await self._record(shadow, taken, tool, tool_use_id, summary)

    async def list_checkpoints(self, agent_id: str) -> list[Checkpoint]:
        """The agent's checkpoints, oldest first."""
        shadow = self.shadow(agent_id)
        if not (shadow / "HEAD").is_file() or await _tip(shadow) is None:
            return []
        out = await _git(_dir(shadow), "log", "--format=%H%x00%B%x1e", REF, cwd=shadow)
        found: list[Checkpoint] = []
        for record in out.split("\x1e"):
            commit, _, message = record.strip("\n").partition("\0")
            checkpoint = parse_message(commit, message) if commit else None
            if checkpoint is not None:
                found.append(checkpoint)
        return found[::-1]

    async def rewind(
        self, agent_id: str, workspace: Path, *, to: int, dry_run: bool = False
    ) -> Rewind:
        """The workspace's files as they were at checkpoint ``to``, just before its tool
        call ran: changed and deleted files put back, files created since removed.
        Ignored files, and files over the size cap then or now, are left alone. A
        checkpoint is taken first, so that rewinding to it undoes this. A dry run
        changes nothing and says what would change, with the patch."""
        async with self._lock(agent_id):
            workspace = _workspace(workspace)
            shadow = self.shadow(agent_id)
            tip = await _tip(shadow) if (shadow / "HEAD").is_file() else None
            target = await _find(shadow, agent_id, tip, to)
            await self._open(agent_id, workspace)
            undo: int | None = None
            if dry_run:
                # The snapshot of now goes through the index: put it back as it was.
                index = shadow / "index"
                saved = index.read_bytes() if index.is_file() else None
                try:
                    taken = await self._take(shadow, workspace)
                finally:
                    _put_back(index, saved)
            else:
                taken = await self._take(shadow, workspace)
                before = await self._record(shadow, taken, None, None, f"before rewind to {to}")
                undo = before.n
            raw = await _git(
                _dir(shadow), "diff-tree", "-r", "-z", "--raw", "--no-renames",
                taken.tree, target.tree, cwd=shadow,
            )  # fmt: skip
            changes = parse_raw(raw)
            plan = plan_rewind(changes, frozenset([*taken.skipped, *target.checkpoint.skipped]))
            plan = await self._spare_ignored(shadow, target.tree, changes, plan)
            if dry_run:
                restore, blocked = await asyncio.to_thread(
                    unblocked, workspace, plan.restore, set(plan.remove)
                )
                patch = await _patch(shadow, taken.tree, target.tree, plan, blocked)
                return Rewind(
                    to, True, [c.path for c in restore], plan.remove,
                    sorted([*plan.kept, *blocked]), patch, None,
                )  # fmt: skip
            removed = await asyncio.to_thread(remove_files, workspace, plan.remove)
            restore, blocked = await asyncio.to_thread(unblocked, workspace, plan.restore, set())
            await _restore(shadow, workspace, restore)
            kept = sorted({*plan.kept, *blocked, *(set(plan.remove) - set(removed))})
            logger.info(
                "agent %s rewound to checkpoint %d: %d restored, %d removed, %d kept",
                agent_id, to, len(restore), len(removed), len(kept),
            )  # fmt: skip
            return Rewind(to, False, [c.path for c in restore], removed, kept, "", undo)

    async def drop(self, agent_id: str) -> None:
        """The agent's checkpoints gone, shadow repository and all."""
        shadow = self.shadow(agent_id)
        async with self._lock(agent_id):
            await asyncio.to_thread(shutil.rmtree, shadow, ignore_errors=True)
        self._locks.pop(agent_id, None)
        self._excluded = {pair for pair in self._excluded if pair[0] != shadow}

    def _lock(self, agent_id: str) -> asyncio.Lock:
        return self._locks.setdefault(agent_id, asyncio.Lock())

    async def _open(self, agent_id: str, workspace: Path) -> Path:
        """The agent's shadow repository, made on first use."""
        shadow = self.shadow(agent_id)
        if not (shadow / "HEAD").is_file():
            await self._create(shadow)
        lock = shadow / "index.lock"
        if lock.exists() and time.time() - lock.stat().st_mtime > _STALE_LOCK_SECONDS:
            logger.warning("removing %s, left by a git that did not finish", lock)
            lock.unlink(missing_ok=True)
        if (shadow, workspace) not in self._excluded:
            self._exclude_ourselves(shadow, workspace)
            self._excluded.add((shadow, workspace))
        return shadow

    async def _create(self, shadow: Path) -> None:
        # Made aside then renamed into place, so that a half-made one is never used.
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = self.root / f".{shadow.name}.new"
        await asyncio.to_thread(shutil.rmtree, fresh, ignore_errors=True)
        await _git(
            "init", "--bare", "--quiet", "--template=", "--initial-branch=checkpoints",
            str(fresh), cwd=self.root,
        )  # fmt: skip
        fresh.chmod(0o700)
        with (fresh / "config").open("a") as config:
            config.write(_CONFIG)
        (fresh / "info").mkdir(exist_ok=True)
        (fresh / "info" / "attributes").write_text(_ATTRIBUTES)
        fresh.rename(shadow)

    def _exclude_ourselves(self, shadow: Path, workspace: Path) -> None:
        """When the checkpoints live inside the workspace (an agent working in the
        home directory), they must not be snapshotted into themselves."""
        exclude = shadow / "info" / "exclude"
        try:
            inside = self.root.resolve().relative_to(workspace)
        except ValueError:
            exclude.unlink(missing_ok=True)
            return
        exclude.write_text(exclude_pattern(inside.as_posix()) + "\n")

    async def _take(self, shadow: Path, workspace: Path) -> _Taken:
        """The workspace into the shadow's index, as far as it differs from it: only the
        paths ``status`` names are looked at again. Their size is checked before git
        reads them, so a large file is never hashed or stored."""
        where = _at(shadow, workspace)
        status = await _git(
            *where, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames",
            cwd=workspace,
        )  # fmt: skip
        changes = parse_status(status)
        take, skipped, vanished = await asyncio.to_thread(
            _measure, workspace, changes.present, self.max_file_bytes
        )
        for chunk in _chunks([*changes.gone, *vanished, *take]):
            await _git(*where, "update-index", "--add", "--remove", "--replace", "--", *chunk,
                      cwd=workspace)  # fmt: skip
        # A file the index holds that has grown over the cap: out of the snapshot.
        for chunk in _chunks([p for p in skipped if p in changes.tracked]):
            await _git(*where, "update-index", "--force-remove", "--", *chunk, cwd=workspace)
        tree = (await _git(*where, "write-tree", cwd=workspace)).strip()
        return _Taken(tree, sorted(skipped))

    async def _record(
        self,
        shadow: Path,
        taken: _Taken,
        tool: str | None,
        tool_use_id: str | None,
        summary: str,
    ) -> Checkpoint:
        tip = await _tip(shadow)
        files: list[ChangedFile] = []
        if tip is not None and tip.tree != taken.tree:
            out = await _git(
                _dir(shadow), "diff-tree", "-r", "-z", "--name-status", "--no-renames",
                tip.tree, taken.tree, cwd=shadow,
            )  # fmt: skip
            files = parse_name_status(out)
        n = tip.checkpoint.n + 1 if tip else 1
        message = format_message(
            n, time.time(), tool=tool, tool_use_id=tool_use_id, summary=summary,
            files=files, skipped=taken.skipped,
        )  # fmt: skip
        # From a file: the message can be longer than one argument may be.
        message_file = shadow / "CHECKPOINT_MSG"
        message_file.write_text(message)
        parent = ("-p", tip.commit) if tip else ()
        out = await _git(
            _dir(shadow), *AS_AGENTDECK, "commit-tree", "--no-gpg-sign", taken.tree, *parent,
            "-F", str(message_file), cwd=shadow,
        )  # fmt: skip
        commit = out.strip()
        # Guarded by the old value: a second process snapshotting the agent fails here
        # rather than losing a checkpoint.
        old = tip.commit if tip else ""
        await _git(_dir(shadow), "update-ref", REF, commit, old, cwd=shadow)
        checkpoint = parse_message(commit, message)
        assert checkpoint is not None  # we just wrote it
        return checkpoint

    async def _spare_ignored(
        self, shadow: Path, target_tree: str, changes: list[TreeChange], plan: RewindPlan
    ) -> RewindPlan:
        """Files to remove that the checkpoint's .gitignore files ignored (so existed
        then, untaken) are kept. Only a rewind across a change to a .gitignore can
        meet one: otherwise the rules then and now are the same."""
        if not plan.remove or not any(_is_gitignore(c.path) for c in changes):
            return plan
        rules = shadow / "rewind-rules"
        await asyncio.to_thread(shutil.rmtree, rules, ignore_errors=True)
        try:
            listing = await _git(_dir(shadow), "ls-tree", "-r", "-z", target_tree, cwd=shadow)
            for entry in listing.split("\0"):
                head, _, path = entry.partition("\t")
                if not _is_gitignore(path):
                    continue
                blob = head.split()[2]
                text = await _git(_dir(shadow), "cat-file", "blob", blob, cwd=shadow)
                (rules / path).parent.mkdir(parents=True, exist_ok=True)
                (rules / path).write_text(text)
            rules.mkdir(exist_ok=True)
            ignored: set[str] = set()
            # check-ignore takes no --literal-pathspecs: a name that reads as pathspec
            # magic is not asked about (and is removed, as anything not ignored).
            for chunk in _chunks([p for p in plan.remove if not p.startswith(":")]):
                # One path a line (-z is for --stdin only), quoted when it must be.
                out = await _git(
                    *_at(shadow, rules), "check-ignore", "--no-index", "--", *chunk,
                    cwd=rules, ok=(0, 1),
                )  # fmt: skip
                ignored.update(unquote(line) for line in out.splitlines() if line)
        finally:
            await asyncio.to_thread(shutil.rmtree, rules, ignore_errors=True)
        return RewindPlan(
            plan.restore,
            [p for p in plan.remove if p not in ignored],
            sorted([*plan.kept, *ignored]),
        )


async def _git(*args: str, cwd: Path, ok: tuple[int, ...] = (0,)) -> str:
    """git on a shadow repository, whose attributes turn every driver off."""
    return await git(*args, cwd=cwd, ok=ok, drivers_off=True)


def _workspace(workspace: Path) -> Path:
    if not workspace.is_dir():
        raise WorktreeError(f"the workspace {workspace} is not a directory")
    return workspace.resolve()


def _dir(shadow: Path) -> str:
    return f"--git-dir={shadow}"


def _at(shadow: Path, workspace: Path) -> tuple[str, str]:
    """git on the shadow repository, with the workspace as its work tree."""
    return f"--git-dir={shadow}", f"--work-tree={workspace}"


async def _tip(shadow: Path) -> _Tip | None:
    """The latest checkpoint, with its commit and tree; None before the first."""
    out = await _git(
        _dir(shadow), "for-each-ref", "--format=%(objectname) %(tree)%00%(contents)", REF,
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
    return _Tip(commit, tree, checkpoint)


async def _find(shadow: Path, agent_id: str, tip: _Tip | None, n: int) -> _Tip:
    """Checkpoint ``n``: the one ``last - n`` commits behind the last."""
    if tip is None or not 1 <= n <= tip.checkpoint.n:
        known = f"it has checkpoints 1 to {tip.checkpoint.n}" if tip else "it has none yet"
        raise NotFound(f"checkpoint of agent {agent_id}", str(n), hint=known)
    out = await _git(
        _dir(shadow), "log", "-1", "--format=%H%x00%T%x00%B",
        f"{tip.commit}~{tip.checkpoint.n - n}", cwd=shadow,
    )  # fmt: skip
    commit, tree, message = out.split("\0", 2)
    checkpoint = parse_message(commit, message)
    if checkpoint is None or checkpoint.n != n:
        raise WorktreeError(
            f"the checkpoints in {shadow} are damaged: checkpoint {n} is not where it should be",
            hint="delete that directory to start the agent's checkpoints afresh",
        )
    return _Tip(commit, tree, checkpoint)


def _measure(workspace: Path, paths: list[str], cap: int) -> tuple[list[str], list[str], list[str]]:
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


def _chunks(paths: list[str], budget: int = _ARGV_BYTES) -> Iterator[list[str]]:
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


def _put_back(index: Path, saved: bytes | None) -> None:
    if saved is None:
        index.unlink(missing_ok=True)
        return
    spare = index.with_name("index.dry-run")
    spare.write_bytes(saved)
    spare.replace(index)


def _is_gitignore(path: str) -> bool:
    return path == ".gitignore" or path.endswith("/.gitignore")


async def _restore(shadow: Path, workspace: Path, restore: list[TreeChange]) -> None:
    """The checkpoint's version of each file into the shadow's index, then onto disk:
    ``checkout-index`` writes exactly these paths and nothing else."""
    if not restore:
        return
    where = _at(shadow, workspace)
    infos = [f"{c.new_mode},{c.new_object},{c.path}" for c in restore]
    for chunk in _chunks(infos):
        cacheinfo = [arg for info in chunk for arg in ("--cacheinfo", info)]
        await _git(*where, "update-index", "--add", "--replace", *cacheinfo, cwd=workspace)
    for chunk in _chunks([c.path for c in restore]):
        await _git(*where, "checkout-index", "--force", "--index", "--", *chunk, cwd=workspace)


async def _patch(shadow: Path, now: str, then: str, plan: RewindPlan, blocked: list[str]) -> str:
    """What the rewind would change, as a patch from now to the checkpoint."""
    diff = (
        _dir(shadow), "diff-tree", "-p", "-r", "--no-renames", "--no-color", "--no-ext-diff",
        "--no-textconv", now, then,
    )  # fmt: skip
    if not plan.kept and not blocked:
        return await _git(*diff, cwd=shadow)
    paths = [*(c.path for c in plan.restore if c.path not in blocked), *plan.remove]
    parts = [
        await _git("--literal-pathspecs", *diff, "--", *chunk, cwd=shadow)
        for chunk in _chunks(sorted(paths))
    ]
    return "".join(parts)
