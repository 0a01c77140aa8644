"""The merge queue: agents' branches landed one at a time per repository, in the
order they were asked for, each test-gated (``worktrees.merge``).

An entry is a row first (``queued``), so the queue survives the process: one
left queued or mid-merge by a process that died is taken again by the daemon at
its next start. In one process the entries of a repository wait on one lock,
first come first served; across processes on one machine the merge's own lock
file serialises; on a PostgreSQL deck, whose hosts each have their own home, an
advisory lock keyed by the repository's real path (``store.advisory``) is held
from the take to the outcome, so two hosts never merge into one repository at
once, and one that dies mid-merge lets the next one in. An entry records the
runner host that queued or took it (``owner_host``): a pid names a process on one
machine only. Another host takes again what a lost host (its heartbeat older than
its lease, or stopped) left queued or mid-merge, if it reaches the repository
(``recover``, at a daemon's start and with each host's reaping).
Every outcome is a ``merge`` notice on the agent and an audit entry.

The test runs in the sandbox of the agent's profile (``merge_sandbox``); its
command is a person's or the target's ``.agentdeck/merge.yaml`` (the deck's tool
for models takes none).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from pathlib import Path

from agentdeck.core.agent import Agent
from agentdeck.core.events import Notice
from agentdeck.core.merge_queue import PENDING, MergeEntry, MergeState
from agentdeck.core.worktree import STRATEGIES, Strategy
from agentdeck.errors import AgentdeckError, NotFound, Refused, StoreError, WorktreeError
from agentdeck.governance.governor import Governor
from agentdeck.runner import procs
from agentdeck.runner.merge_sandbox import confine_for, deck_secrets
from agentdeck.settings import Settings
from agentdeck.store import advisory
from agentdeck.store.hosts import HostStore
from agentdeck.store.merges import MergeStore
from agentdeck.store.store import Store
from agentdeck.worktrees import worktree_of
from agentdeck.worktrees.merge import check_target, clear_leftover, merge

logger = logging.getLogger(__name__)


def merge_lock_name(repo: str) -> str:
    """The deck-wide lock of a repository's merges: its real path, as every host
    that reaches it by the same path names it."""
    return "merge:" + os.path.realpath(repo)


class MergeQueue:
    def __init__(self, store: Store, governor: Governor, scratch: Path) -> None:
        self.store = store
        self.settings: Settings = governor.settings
        self.records = MergeStore(store)
        self.governor = governor
        self.scratch = scratch  # where the scratch worktrees of merges go
        self._locks: dict[str, asyncio.Lock] = {}  # per repository: FIFO in this process
        self._tasks: dict[str, asyncio.Task[MergeEntry]] = {}
        self._clearing: set[asyncio.Task[None]] = set()
        self.host: str | None = None  # this process's runner host, once it runs as one

    async def enqueue(
        self,
        agent: Agent,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        by: str = "user:cli",
    ) -> MergeEntry:
        """The agent's branch in its repository's queue; merged in the background
        (``wait`` for the outcome). What cannot be merged at all fails here, at once."""
        if strategy not in STRATEGIES:
            raise WorktreeError(
                f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}"
            )
        worktree = worktree_of(agent)
        target = into or worktree.base
        await check_target(worktree.repo, target)
        entry = MergeEntry(
            id="mg" + secrets.token_hex(6), agent_id=agent.id, repo=worktree.repo,
            branch=worktree.branch, target=target, strategy=strategy, test=test,
            state=MergeState.QUEUED, by=by, enqueued_at=time.time(), owner_pid=os.getpid(),
            owner_host=self.host,
        )  # fmt: skip
        await self.records.create(entry)
        ahead = await self.records.list_merges(states=PENDING, repo=entry.repo, limit=1000)
        await self.store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="merge_queued",
                    message=f"{entry.branch} queued to land on {target} "
                    f"(position {len(ahead)} in {entry.repo}'s queue)",
                    detail=entry.to_dict(),
                )  # fmt: skip
            ]
        )
        self._start(entry)
        return entry

    async def wait(self, entry_id: str) -> MergeEntry:
        """Its outcome, once merged (or cancelled). A caller that gives up waiting
        does not stop the merge."""
        task = self._tasks.get(entry_id)
        if task is None:
            return await self.records.get(entry_id)
        return await asyncio.shield(task)

    async def cancel(self, ref: str, *, by: str) -> MergeEntry:
        entry = await self.records.find(ref)
        cancelled = await self.records.cancel(entry.id, by=by)
        if cancelled is None:
            raise Refused(
                f"merge {entry.id} is {entry.state}, not queued: it can no longer be cancelled"
            )
        await self.store.append(
            [
                Notice(
                    agent_id=entry.agent_id,
                    ts=time.time(),
                    kind="merge",
                    message=f"merge of {entry.branch} into {entry.target} cancelled by {by}",
                    detail=cancelled.result(),
                )  # fmt: skip
            ]
        )
        return cancelled

    async def recover(self, *, hosts_only: bool = False) -> list[MergeEntry]:
        """Take again the entries a process that died left queued or mid-merge, in
        the order they came (the daemon at its start): on a deck with hosts, those
        of a host that is lost, whose repository this machine reaches.
        ``hosts_only``: only those (a runner host, as it reaps)."""
        found = await self.records.list_merges(states=PENDING, oldest_first=True, limit=10_000)
        found = [e for e in found if e.id not in self._tasks]
        lost = await self._lost_hosts(found)
        orphans = [
            e for e in found
            if (not hosts_only or e.owner_host in lost) and self._orphaned(e, lost)
        ]  # fmt: skip
        for repo in dict.fromkeys(e.repo for e in orphans if e.state is MergeState.MERGING):
            if advisory.conninfo(self.store) is None:  # one machine: behind the lock file
                await clear_leftover(repo)  # its test killed, its scratch worktree removed
            else:
                self._start_clearing(repo)
        for entry in orphans:
            left_by = f"runner host {entry.owner_host}" if entry.owner_host in lost else "a process"
            logger.warning("taking again merge %s left %s by %s that ended", entry.id,
                           entry.state, left_by)  # fmt: skip
            self._start(entry, again=True)
        return orphans

    def _orphaned(self, entry: MergeEntry, lost: set[str]) -> bool:
        if entry.owner_host is not None and entry.owner_host != self.host:
            # Another host's: its pid means nothing here; taken if that host is
            # lost and this machine reaches the repository (else left to one that does).
            return entry.owner_host in lost and Path(entry.repo).is_dir()
        return entry.owner_pid is None or not procs.is_running(entry.owner_pid)

    async def _lost_hosts(self, entries: list[MergeEntry]) -> set[str]:
        """Of the hosts these entries name (not this one), those lost: stopped, or
        no heartbeat for a whole lease (by the database's clock)."""
        named = {e.owner_host for e in entries if e.owner_host and e.owner_host != self.host}
        if not named:
            return set()
        registry = HostStore.of(self.store, self.settings)
        known, now = await registry.list_hosts()
        live = {
            h.name for h in known
            if h.stopped_at is None and now - h.heartbeat_at < registry.lease_seconds
        }  # fmt: skip
        return named - live

    async def close(self) -> None:
        """Stop the merges under way; their entries are taken again at the next start."""
        tasks = [t for t in [*self._tasks.values(), *self._clearing] if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- merging -------------------------------------------------------------------

    def _start_clearing(self, repo: str) -> None:
        """What a merge that ended with its process left in ``repo``, cleared in the
        background under the deck-wide lock: on a deck with hosts, an entry's pid
        means nothing on another host, so its merge may be under way there (this
        waits for it, without holding up the start), and this queue's own merges
        of the repository come after (its lock is first come, first served)."""

        async def clear() -> None:
            async with self._locks.setdefault(repo, asyncio.Lock()):
                try:
                    async with advisory.held(self.store, merge_lock_name(repo)):
                        await clear_leftover(repo)
                except StoreError as exc:
                    logger.warning("left what a merge left in %s: %s", repo, exc.message)

        task = asyncio.create_task(clear(), name=f"merge leftovers {repo}")
        self._clearing.add(task)
        task.add_done_callback(self._clearing.discard)

    def _start(self, entry: MergeEntry, *, again: bool = False) -> None:
        task = asyncio.create_task(self._run(entry, again=again), name=f"merge {entry.id}")
        self._tasks[entry.id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(entry.id, None))

    async def _run(self, entry: MergeEntry, *, again: bool) -> MergeEntry:
        async with self._locks.setdefault(entry.repo, asyncio.Lock()):
            locked = False
            try:
                async with advisory.held(self.store, merge_lock_name(entry.repo)):
                    locked = True
                    return await self._merge(entry, again=again)
            except StoreError as exc:
                if locked:
                    raise
                # The deck-wide lock could not be taken: not merged, and said so
                # (if it is still queued: one left merging may be another host's).
                if await self.records.take(entry.id, host=self.host) is None:
                    return await self.records.get(entry.id)
                finished = await self.records.finish(
                    entry.id, MergeState.FAILED, reason=f"not merged: {exc.message}"
                )
                with contextlib.suppress(NotFound):
                    await self._record(await self.store.get_agent(entry.agent_id), finished)
                return finished

    async def _merge(self, entry: MergeEntry, *, again: bool) -> MergeEntry:
        """Take the entry and merge it: under the repository's locks."""
        taken = await self.records.take(entry.id, again=again, host=self.host)
        if taken is None:  # cancelled while it waited
            return await self.records.get(entry.id)
        try:
            agent = await self.store.get_agent(entry.agent_id)
        except NotFound:
            return await self.records.finish(
                entry.id, MergeState.FAILED,
                reason=f"the agent {entry.agent_id} is gone; {entry.branch} is still there",
            )  # fmt: skip
        try:
            worktree = worktree_of(agent)
            profile = agent.spec.profile or self.settings.profile
            sandbox = self.governor.profile_for(agent).sandbox
            outcome = await merge(
                worktree, scratch=self.scratch, into=entry.target,
                strategy=entry.strategy,  # type: ignore[arg-type]  # checked when queued
                test=entry.test,
                message=f"Merge {entry.branch} ({agent.name}) into {entry.target}",
                confine=confine_for(sandbox, self.settings, worktree.git_dir, profile),
                hide=deck_secrets(self.settings),
            )  # fmt: skip
        except AgentdeckError as exc:
            finished = await self.records.finish(entry.id, MergeState.FAILED, reason=exc.message)
        except Exception as exc:  # the entry must end, whatever broke
            logger.exception("merge %s failed", entry.id)
            finished = await self.records.finish(
                entry.id, MergeState.FAILED, reason=f"{type(exc).__name__}: {exc}"
            )
        else:
            finished = await self.records.finish(
                entry.id,
                MergeState.LANDED if outcome.landed else MergeState.REFUSED,
                reason=outcome.reason, commit=outcome.commit, outcome=outcome.to_dict(),
            )  # fmt: skip
        await self._record(agent, finished)
        return finished

    async def _record(self, agent: Agent, entry: MergeEntry) -> None:
        await self.store.append(
            [
                Notice(
                    agent_id=agent.id,
                    ts=time.time(),
                    kind="merge",
                    message=entry.reason or str(entry.state),
                    detail=entry.result(),
                )  # fmt: skip
            ]
        )
        await self.governor.audit(
            agent,
            "merge",
            {
                "branch": entry.branch,
                "into": entry.target,
                "strategy": entry.strategy,
                "test": entry.shown_test,
                "merge": entry.id,
            },  # fmt: skip
            "allowed" if entry.landed else "denied",
            entry.reason or str(entry.state),
            None,
            entry.by,
        )
