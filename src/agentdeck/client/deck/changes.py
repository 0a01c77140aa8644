"""``RemoteDeck``'s changes: ``/api/agents/<ref>/diff``, ``checkpoints``, ``rewind``
and ``merge``, and the merge queue under ``/api/merges``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from agentdeck.client.deck.base import RemoteBase, api_path, field, with_agent
from agentdeck.core.checkpoint import Checkpoint, Rewind
from agentdeck.core.merge_queue import MergeEntry, MergeState
from agentdeck.core.worktree import Strategy, WorktreeDiff
from agentdeck.errors import NotFound, UsageError

MERGE_PAGE = 1000  # /api/merges' largest page


def merge_path(ref: str, action: str | None = None) -> str:
    """``/api/merges/<ref>[/<action>]``, the ref quoted whole; an empty ref names no
    entry (its path would be the list's)."""
    if not ref:
        raise NotFound("merge", ref)
    path = f"/api/merges/{quote(ref, safe='')}"
    return f"{path}/{action}" if action else path


class RemoteChanges(RemoteBase):
    async def diff(
        self, ref: str, *, against: str | None = None, patch: bool = True
    ) -> WorktreeDiff:
        params: dict[str, Any] = {"stat": not patch}
        if against is not None:
            params["against"] = against
        answer = await self.http.call("GET", api_path("agents", ref, "diff"), params=params)
        return WorktreeDiff.from_dict(answer)

    async def checkpoints(self, ref: str) -> list[Checkpoint]:
        answer = await self.http.call("GET", api_path("agents", ref, "checkpoints"))
        return [Checkpoint.from_dict(c) for c in field(answer, "checkpoints")]

    async def rewind(self, ref: str, *, to: int | None = None, dry_run: bool = False) -> Rewind:
        body = {"to": to, "dry_run": dry_run}
        path = api_path("agents", ref, "rewind")
        return Rewind.from_dict(await self.http.call("POST", path, json=body))

    async def merge(
        self,
        ref: str,
        *,
        into: str | None = None,
        strategy: Strategy = "merge",
        test: str | None = None,
        wait: bool = True,
    ) -> MergeEntry:
        body = {"into": into, "strategy": strategy, "test": test}
        answer = await self.http.call(
            "POST", api_path("agents", ref, "merge"), json=body, params={"wait": wait},
            # A merge waits for its turn in the queue and for its tests: no read limit.
            no_read_limit=wait,
        )  # fmt: skip
        return MergeEntry.from_result(answer)

    async def merges(
        self,
        *,
        states: list[MergeState] | None = None,
        agent_id: str | None = None,
        limit: int = 100,
    ) -> list[MergeEntry]:
        if not 1 <= limit <= MERGE_PAGE:
            raise UsageError(f"limit must be between 1 and {MERGE_PAGE}, not {limit}")
        params = with_agent({"state": [str(s) for s in states or []], "limit": limit}, agent_id)
        answer = await self.http.call("GET", "/api/merges", params=params)
        return [MergeEntry.from_result(m) for m in field(answer, "merges")]

    async def merge_entry(self, ref: str) -> MergeEntry:
        return MergeEntry.from_result(await self.http.call("GET", merge_path(ref)))

    async def cancel_merge(self, ref: str) -> MergeEntry:
        return MergeEntry.from_result(await self.http.call("POST", merge_path(ref, "cancel")))
