"""Checkpoints of agents' workspaces, and rewinds to them.

Each agent has a shadow repository at ``AGENTDECK_HOME/checkpoints/<agent id>``: a
bare git directory whose work tree, given on every call, is the agent's workspace.
Its objects, refs and index are its own, so the workspace's repository (when it has
one) is never read or written, and nothing is written inside the workspace. One
commit per checkpoint on ``refs/heads/checkpoints``, the checkpoint itself as JSON
in the message (``core.checkpoint``).

A snapshot looks only at what changed since the last one: the index is kept between
snapshots, and the kernel says which paths changed (``watch``), so git is asked
about those paths alone (``status -- PATHS``), not about every file of the
workspace; when nothing changed, git is not asked at all. Where the watch cannot
vouch for the workspace (its first snapshot, a directory moved, a queue overflow,
every ``FULL_EVERY``-th snapshot, a rewind), git looks at every file, re-reading
only those whose stat changed. The last checkpoint is remembered, not read back.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from collections import OrderedDict
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
from agentdeck.errors import UsageError, WorktreeError
from agentdeck.worktrees.git import AS_AGENTDECK, GitFailed
from agentdeck.worktrees.packed_take import PACK_AT_LEAST, pack_into_index
from agentdeck.worktrees.shadow_git import (
    ATTRIBUTES,
    CONFIG,
    REF,
    Tip,
    checkout_files,
    chunks,
    find_checkpoint,
    git_dir,
    is_gitignore,
    measure,
    pathspec,
    put_back_index,
    read_tip,
    rewind_patch,
    run_git,
    under,
    with_work_tree,
)
from agentdeck.worktrees.watch import Watch
from agentdeck.worktrees.workspace_files import remove_files, unblocked

logger = logging.getLogger(__name__)

_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# An index.lock older than this was left by a git that died: no git of ours runs longer.
_STALE_LOCK_SECONDS = 120
# Every this many snapshots of an agent, one looks at every file whatever the watch
# says: what the kernel does not report (see ``watch``) is never missed for long.
FULL_EVERY = 100
# Workspaces watched at once (an inotify instance each; the kernel allows a user 128).
_WATCHES = 32
# Paths measured on the event loop; more go to a thread.
_INLINE = 64


@dataclass(frozen=True)
class _Taken:
    """The workspace as written into the shadow's index."""

    tree: str
    skipped: list[str]  # not taken: over the size cap, or unreadable (all of them)
    files: list[ChangedFile] | None = None  # since the last checkpoint; None: ask git


class Checkpoints:
    """Shadow repositories under ``root`` (``AGENTDECK_HOME/checkpoints``). Files over
    ``max_file_bytes`` are not snapshotted, and rewinds leave them alone."""

    def __init__(self, root: Path, max_file_bytes: int = 10 * 1024 * 1024) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        # One snapshot or rewind of an agent at a time: they share its index.
        self._locks: dict[str, asyncio.Lock] = {}
        self._excluded: set[tuple[Path, Path]] = set()
        self._tips: dict[Path, Tip] = {}  # shadow -> its last checkpoint, as we made it
        self._watches: OrderedDict[Path, Watch] = OrderedDict()  # shadow -> its workspace's
        self._since_full: dict[Path, int] = {}

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
            watch = self._watch(shadow, workspace)
            try:
                changed = await asyncio.to_thread(watch.changed)
                for _ in range(2):
                    tip = await self._last(shadow)
                    if tip is None or self._since_full.get(shadow, 0) >= FULL_EVERY:
                        changed = None
                    taken = await self._take(shadow, workspace, changed, tip)
                    done = await self._record(shadow, taken, tip, tool, tool_use_id, summary)
                    if done is not None:
                        self._since_full[shadow] = 0 if changed is None else (
                            self._since_full.get(shadow, 0) + 1
                        )  # fmt: skip
                        return done
                    changed = None  # another process moved the ref: look at everything
                raise WorktreeError(
                    f"the checkpoints in {shadow} keep changing under this process",
                    hint="is another agentdeck snapshotting the same agent?",
                )
            except BaseException:
                watch.forget()  # what it said is lost with this snapshot: look again
                raise

    async def list_checkpoints(self, agent_id: str) -> list[Checkpoint]:
        """The agent's checkpoints, oldest first."""
        shadow = self.shadow(agent_id)
        if not (shadow / "HEAD").is_file() or await read_tip(shadow) is None:
            return []
        out = await run_git(git_dir(shadow), "log", "--format=%H%x00%B%x1e", REF, cwd=shadow)
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
            self._tips.pop(shadow, None)  # read afresh: another process may have moved it
            self._forget_watch(shadow)  # and the next snapshot looks at everything
            tip = await self._last(shadow) if (shadow / "HEAD").is_file() else None
            target = await find_checkpoint(shadow, agent_id, tip, to)
            await self._open(agent_id, workspace)
            undo: int | None = None
            if dry_run:
                # The snapshot of now goes through the index: put it back as it was.
                index = shadow / "index"
                saved = index.read_bytes() if index.is_file() else None
                try:
                    taken = await self._take(shadow, workspace, None, tip)
                finally:
                    put_back_index(index, saved)
            else:
                taken = await self._take(shadow, workspace, None, tip)
                why = f"before rewind to {to}"
                before = await self._record(shadow, taken, tip, None, None, why)
                if before is None:
                    raise WorktreeError(
                        f"the checkpoints in {shadow} changed during the rewind",
                        hint="is another agentdeck working on the same agent? try again",
                    )
                undo = before.n
            raw = await run_git(
                git_dir(shadow), "diff-tree", "-r", "-z", "--raw", "--no-renames",
                taken.tree, target.tree, cwd=shadow,
            )  # fmt: skip
            changes = parse_raw(raw)
            plan = plan_rewind(changes, frozenset([*taken.skipped, *target.checkpoint.skipped]))
            plan = await self._spare_ignored(shadow, target.tree, changes, plan)
            if dry_run:
                restore, blocked = await asyncio.to_thread(
                    unblocked, workspace, plan.restore, set(plan.remove)
                )
                patch = await rewind_patch(shadow, taken.tree, target.tree, plan, blocked)
                return Rewind(
                    to, True, [c.path for c in restore], plan.remove,
                    sorted([*plan.kept, *blocked]), patch, None,
                )  # fmt: skip
            removed = await asyncio.to_thread(remove_files, workspace, plan.remove)
            restore, blocked = await asyncio.to_thread(unblocked, workspace, plan.restore, set())
            await checkout_files(shadow, workspace, restore)
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
            self._tips.pop(shadow, None)
            self._forget_watch(shadow)
        self._locks.pop(agent_id, None)
        self._excluded = {pair for pair in self._excluded if pair[0] != shadow}

    def _lock(self, agent_id: str) -> asyncio.Lock:
        return self._locks.setdefault(agent_id, asyncio.Lock())

    def _watch(self, shadow: Path, workspace: Path) -> Watch:
        """The watch on the agent's workspace; beyond ``_WATCHES``, the least recently
        used one no snapshot is reading goes (its agent's next snapshot looks at
        everything)."""
        watch = self._watches.get(shadow)
        if watch is None or watch.root != workspace:
            self._forget_watch(shadow)
            try:  # the checkpoints inside the workspace: git's own writes are not news
                inside: str | None = self.root.resolve().relative_to(workspace).as_posix()
            except ValueError:
                inside = None
            watch = self._watches[shadow] = Watch(workspace, skip=inside)
        self._watches.move_to_end(shadow)
        while len(self._watches) > _WATCHES:
            idle = next((s for s in self._watches if not self._busy(s)), None)
            if idle is None:
                break  # each is being read: one goes at a later snapshot
            self._watches.pop(idle).close()
        return watch

    def _busy(self, shadow: Path) -> bool:
        """Whether a snapshot or rewind of the shadow's agent is under way."""
        lock = self._locks.get(shadow.name)
        return lock is not None and lock.locked()

    def _forget_watch(self, shadow: Path) -> None:
        watch = self._watches.pop(shadow, None)
        if watch is not None:
            watch.close()

    async def _last(self, shadow: Path) -> Tip | None:
        """The last checkpoint: as this process made it, else read from the shadow."""
        tip = self._tips.get(shadow)
        if tip is None:
            tip = await read_tip(shadow)
            if tip is not None:
                self._tips[shadow] = tip
        return tip

    async def _open(self, agent_id: str, workspace: Path) -> Path:
        """The agent's shadow repository, made on first use."""
        shadow = self.shadow(agent_id)
        if not (shadow / "HEAD").is_file():
            self._tips.pop(shadow, None)
            self._forget_watch(shadow)
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
        await run_git(
            "init", "--bare", "--quiet", "--template=", "--initial-branch=checkpoints",
            str(fresh), cwd=self.root,
        )  # fmt: skip
        fresh.chmod(0o700)
        with (fresh / "config").open("a") as config:
            config.write(CONFIG)
        (fresh / "info").mkdir(exist_ok=True)
        (fresh / "info" / "attributes").write_text(ATTRIBUTES)
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

    async def _take(
        self, shadow: Path, workspace: Path, changed: set[str] | None, tip: Tip | None
    ) -> _Taken:
        """The workspace into the shadow's index, as far as it differs from it: of the
        ``changed`` paths (None: all of them), only those ``status`` names are looked
        at again. Their size is checked before git reads them, so a large file is never
        hashed or stored."""
        spec = pathspec(changed) if tip is not None else None
        if tip is not None and spec == []:
            return _Taken(tip.tree, tip.checkpoint.skipped, [])
        where = with_work_tree(shadow, workspace)
        status = await run_git(
            "--literal-pathspecs", *where, "status", "--porcelain", "-z",
            "--untracked-files=all", "--no-renames", *(["--", *spec] if spec else []),
            cwd=workspace,
        )  # fmt: skip
        changes = parse_status(status)
        if len(changes.present) < _INLINE:
            take, skipped, vanished = measure(workspace, changes.present, self.max_file_bytes)
        else:
            take, skipped, vanished = await asyncio.to_thread(
                measure, workspace, changes.present, self.max_file_bytes
            )
        if tip is None and len(take) >= PACK_AT_LEAST and not (shadow / "index").exists():
            packed = await pack_into_index(shadow, workspace, take, self.max_file_bytes)
            take, skipped = packed.left, [*skipped, *packed.skipped]
        for chunk in chunks([*changes.gone, *vanished, *take]):
            await run_git(*where, "update-index", "--add", "--remove", "--replace", "--", *chunk,
                      cwd=workspace)  # fmt: skip
        # A file the index holds that has grown over the cap: out of the snapshot.
        for chunk in chunks([p for p in skipped if p in changes.tracked]):
            await run_git(*where, "update-index", "--force-remove", "--", *chunk, cwd=workspace)
        tree = (await run_git(*where, "write-tree", cwd=workspace)).strip()
        files = None
        if spec and tip is not None:
            # Files left out before and not looked at now are left out still.
            looked = set(spec)
            skipped += [p for p in tip.checkpoint.skipped if not under(p, looked)]
            # The index was the last checkpoint: status said what changed since.
            if not changes.staged and not changes.nested:
                files = changes.files(take, [*vanished, *skipped])
        return _Taken(tree, sorted(set(skipped)), files)

    async def _record(
        self,
        shadow: Path,
        taken: _Taken,
        tip: Tip | None,
        tool: str | None,
        tool_use_id: str | None,
        summary: str,
    ) -> Checkpoint | None:
        """The next checkpoint after ``tip``; None when the shadow's last checkpoint is
        no longer ``tip`` (another process made one): nothing is recorded then."""
        files: list[ChangedFile] = taken.files or []
        if tip is not None and tip.tree != taken.tree and taken.files is None:
            out = await run_git(
                git_dir(shadow), "diff-tree", "-r", "-z", "--name-status", "--no-renames",
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
        out = await run_git(
            git_dir(shadow), *AS_AGENTDECK, "commit-tree", "--no-gpg-sign", taken.tree, *parent,
            "-F", str(message_file), cwd=shadow,
        )  # fmt: skip
        commit = out.strip()
        # Guarded by the old value: a second process snapshotting the agent fails here
        # rather than losing a checkpoint.
        old = tip.commit if tip else ""
        try:
            await run_git(git_dir(shadow), "update-ref", REF, commit, old, cwd=shadow)
        except GitFailed:
            self._tips.pop(shadow, None)
            if await read_tip(shadow) == tip:
                raise  # not moved: something else is wrong
            return None
        checkpoint = parse_message(commit, message)
        assert checkpoint is not None  # we just wrote it
        self._tips[shadow] = Tip(commit, taken.tree, checkpoint)
        return checkpoint

    async def _spare_ignored(
        self, shadow: Path, target_tree: str, changes: list[TreeChange], plan: RewindPlan
    ) -> RewindPlan:
        """Files to remove that the checkpoint's .gitignore files ignored (so existed
        then, untaken) are kept. Only a rewind across a change to a .gitignore can
        meet one: otherwise the rules then and now are the same."""
        if not plan.remove or not any(is_gitignore(c.path) for c in changes):
            return plan
        rules = shadow / "rewind-rules"
        await asyncio.to_thread(shutil.rmtree, rules, ignore_errors=True)
        try:
            listing = await run_git(git_dir(shadow), "ls-tree", "-r", "-z", target_tree, cwd=shadow)
            for entry in listing.split("\0"):
                head, _, path = entry.partition("\t")
                if not is_gitignore(path):
                    continue
                blob = head.split()[2]
                text = await run_git(git_dir(shadow), "cat-file", "blob", blob, cwd=shadow)
                (rules / path).parent.mkdir(parents=True, exist_ok=True)
                (rules / path).write_text(text)
            rules.mkdir(exist_ok=True)
            ignored: set[str] = set()
            # check-ignore takes no --literal-pathspecs: a name that reads as pathspec
            # magic is not asked about (and is removed, as anything not ignored).
            for chunk in chunks([p for p in plan.remove if not p.startswith(":")]):
                # One path a line (-z is for --stdin only), quoted when it must be.
                out = await run_git(
                    *with_work_tree(shadow, rules), "check-ignore", "--no-index", "--", *chunk,
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


def _workspace(workspace: Path) -> Path:
    if not workspace.is_dir():
        raise WorktreeError(f"the workspace {workspace} is not a directory")
    return workspace.resolve()
