"""The Deck's view of what agents changed: worktree diffs, the merge queue,
checkpoints and rewinds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentdeck.core.agent import Agent
from agentdeck.core.checkpoint import Checkpoint, Rewind
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.worktree import Strategy, Worktree
from agentdeck.daemon.deck.parts import DeckParts

if TYPE_CHECKING:
    from agentdeck.worktrees.manager import Diff


class Changes(DeckParts):
    def worktree_of(self, agent: Agent) -> Worktree:
        """The agent's worktree; ``WorktreeError`` for one working in a plain directory."""
        from agentdeck.worktrees import worktree_of

        return worktree_of(agent)

    async def diff(
        self, worktree: Worktree, *, against: str | None = None, patch: bool = True
    ) -> Diff:
        """The worktree now (commits, uncommitted and untracked files) against where
        it started, or against where it left ``against``."""
        return await self._runner.worktrees.diff(worktree, against=against, patch=patch)

    async def merge(
        self,
        agent: Agent,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        by: str,
        wait: bool = True,
    ) -> MergeEntry:
        """Queue the agent's branch (test-gated, one at a time); with ``wait``, its outcome."""
        return await self._runner.merge(
            agent, into=into, strategy=strategy, test=test, by=by, wait=wait
        )

    async def merges(
        self,
        *,
        states: Sequence[MergeState] | None = None,
        agent_id: str | None = None,
        oldest_first: bool = False,
        limit: int = 100,
    ) -> list[MergeEntry]:
        """Entries of the merge queue, newest first unless ``oldest_first``."""
        return await self._runner.merges.records.list_merges(
            states=states, agent_id=agent_id, oldest_first=oldest_first, limit=limit
        )

    async def merge_entry(self, ref: str) -> MergeEntry:
        """One entry, by id or unique prefix."""
        return await self._runner.merges.records.find(ref)

    async def cancel_merge(self, ref: str, *, by: str) -> MergeEntry:
        """Take a ``queued`` entry out of the queue (``InvalidState`` otherwise)."""
        return await self._runner.merges.cancel(ref, by=by)

    async def checkpoints(self, agent_id: str) -> list[Checkpoint]:
        """The agent's checkpoints, oldest first."""
        return await self._runner.checkpoints.list_checkpoints(agent_id)

    async def rewind(
        self, agent: Agent, *, to: int | None = None, dry_run: bool = False, by: str
    ) -> Rewind:
        """Its workspace back to checkpoint ``to`` (default: the last one)."""
        return await self._runner.rewind(agent, to=to, dry_run=dry_run, by=by)
