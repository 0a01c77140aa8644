"""The Deck's view of what agents changed: worktree diffs, the merge queue,
checkpoints and rewinds, by ref (``core.deck.ChangeOps``). The web layer names who
acts with ``by``; in-process it is the local user."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agentdeck.core.agent import Agent
from agentdeck.core.checkpoint import Checkpoint, Rewind
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.patch_scrub import scrub_patch
from agentdeck.core.worktree import STRATEGIES, Strategy, WorktreeDiff, branch_problem
from agentdeck.daemon.deck.inbox import LOCAL_ACTOR
from agentdeck.daemon.deck.parts import DeckParts
from agentdeck.errors import UsageError

MERGE_PAGE = 1000  # the most entries one listing reads (the API's limit too)


class Changes(DeckParts):
    _embedded: bool

    async def _found(self, ref: str) -> Agent:
        """The agent ``ref`` names, as its live session sees it when it runs here."""
        session = self._runner.sessions.get(ref)
        if session is not None:
            return session.agent
        return self._fresh(await self._store.find_agent(ref))

    async def diff(
        self, ref: str, *, against: str | None = None, patch: bool = True
    ) -> WorktreeDiff:
        from agentdeck.worktrees import worktree_of

        agent = await self._found(ref)
        worktree = worktree_of(agent)
        changes = await self._runner.worktrees.diff(worktree, against=against, patch=patch)
        return WorktreeDiff(
            agent_id=agent.id,
            branch=worktree.branch,
            base=worktree.base,
            against=changes.against,
            files=changes.files,
            patch=scrub_patch(changes.patch),  # a viewer like the event log: no secrets
        )

    async def merge(
        self,
        ref: str,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        wait: bool = True,
        by: str = LOCAL_ACTOR,
    ) -> MergeEntry:
        """Queue the agent's branch (test-gated, one at a time); with ``wait``, its
        outcome. A deck embedded in one command does not queue without waiting: the
        merge would end with the command."""
        if not wait and self._embedded:
            raise UsageError(
                "--no-wait needs the daemon to merge after this command ends",
                hint="`agentdeck up` starts it; or merge without --no-wait",
            )
        if strategy not in STRATEGIES:
            raise UsageError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        if into is not None and (problem := branch_problem(into)) is not None:
            raise UsageError(
                f"cannot merge into {into!r}: {problem}", hint="name a branch of the repository"
            )
        if test is not None and "\0" in test:
            raise UsageError(
                "a test command cannot hold a NUL character", hint="nothing was queued"
            )
        agent = await self._found(ref)
        return await self._runner.merge(
            agent, into=into, strategy=strategy, test=test, by=by, wait=wait
        )

    async def merges(
        self,
        *,
        states: Sequence[MergeState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
        oldest_first: bool = False,
    ) -> list[MergeEntry]:
        """Entries of the merge queue, newest first unless ``oldest_first``;
        ``agent_id`` names the agent as a ref does (``NotFound`` for none)."""
        if not 1 <= limit <= MERGE_PAGE:
            raise UsageError(f"limit must be between 1 and {MERGE_PAGE}, not {limit}")
        wanted = None if agent_id is None else await self._agent_id(agent_id)
        return await self._runner.merges.records.list_merges(
            states=states, agent_id=wanted, oldest_first=oldest_first, limit=limit
        )

    async def merge_entry(self, ref: str) -> MergeEntry:
        """One entry, by id or unique prefix."""
        return await self._runner.merges.records.find(ref)

    async def cancel_merge(self, ref: str, *, by: str = LOCAL_ACTOR) -> MergeEntry:
        """Take a ``queued`` entry out of the queue (``Refused`` otherwise: 409)."""
        return await self._runner.merges.cancel(ref, by=by)

    async def checkpoints(self, ref: str) -> list[Checkpoint]:
        """The agent's checkpoints, oldest first."""
        return await self._runner.checkpoints.list_checkpoints(await self._agent_id(ref))

    async def rewind(
        self, ref: str, *, to: int | None = None, dry_run: bool = False, by: str = LOCAL_ACTOR
    ) -> Rewind:
        """Its workspace back to checkpoint ``to`` (default: the last one); a dry
        run's patch scrubbed of secrets."""
        if to is not None and to < 1:
            raise UsageError(f"checkpoints are numbered from 1, not {to}")
        agent = await self._found(ref)
        done = await self._runner.rewind(agent, to=to, dry_run=dry_run, by=by)
        return replace(done, patch=scrub_patch(done.patch)) if done.patch else done
