"""The Deck interface, what agents changed: worktree diffs, checkpoints and
rewinds, the merge queue."""

from __future__ import annotations

from typing import Protocol

from agentdeck.core.checkpoint import Checkpoint, Rewind
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.worktree import Strategy, WorktreeDiff


class ChangeOps(Protocol):
    """What agents changed: worktree diffs, checkpoints and rewinds, the merge queue.
    ``ref`` names an agent, but a merge entry's id (or a unique id prefix) for
    ``merge_entry`` and ``cancel_merge``. What a viewer sees is scrubbed of
    secrets, like the event log: patches and test commands."""

    async def diff(
        self, ref: str, *, against: str | None = None, patch: bool = True
    ) -> WorktreeDiff:
        """What an agent in a worktree changed (commits, uncommitted and untracked
        files) against the commit it started from, or against where its branch left
        ``against``; without ``patch``, only the files. ``WorktreeError`` for an
        agent working in a plain directory."""
        ...

    async def checkpoints(self, ref: str) -> list[Checkpoint]:
        """The agent's checkpoints, oldest first: one before each of its
        file-changing tool calls."""
        ...

    async def rewind(self, ref: str, *, to: int | None = None, dry_run: bool = False) -> Rewind:
        """The agent's files back as they were at checkpoint ``to`` (default: the
        last one); ``dry_run`` says what would change, with the patch, and changes
        nothing. ``InvalidState`` while it works."""
        ...

    async def merge(
        self,
        ref: str,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        wait: bool = True,
    ) -> MergeEntry:
        """Put the agent's branch in its repository's merge queue (test-gated, one
        at a time); with ``wait``, the entry once it ended (landed or refused, with
        why), else at once, queued. ``into``: the branch to land on (default: the
        one it started from); ``test``: the command the combination must pass."""
        ...

    async def merges(
        self,
        *,
        states: list[MergeState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[MergeEntry]:
        """Entries of the merge queue in ``states`` (None: all), of one agent if
        given (a ref), newest first."""
        ...

    async def merge_entry(self, ref: str) -> MergeEntry: ...

    async def cancel_merge(self, ref: str) -> MergeEntry:
        """Take a ``queued`` entry out of the queue (``Refused`` otherwise: 409)."""
        ...
