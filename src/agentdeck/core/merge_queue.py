"""The merge queue: agents' branches waiting to be landed, one at a time per
repository. Pure: the queue is rows in the store, the merging is git's.

``queued → merging → landed | refused | failed``, or ``queued → cancelled``. An
entry is taken by one process (a conditional ``queued → merging``); the queue
keeps each repository's entries in the order they came. A process that dies
mid-merge leaves its entry ``merging`` under a dead owner: the daemon takes it
again at its next start (a merge that had landed then finds nothing to merge).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from agentdeck.core.redact import scrub


class MergeState(StrEnum):
    QUEUED = "queued"
    MERGING = "merging"  # combined, tested, landed: under the repository's lock
    LANDED = "landed"
    REFUSED = "refused"  # conflicts, failing tests, nothing to merge
    FAILED = "failed"  # git or the test runner broke: the reason says how
    CANCELLED = "cancelled"


PENDING = (MergeState.QUEUED, MergeState.MERGING)

# What a later session, tool or merge runs or obeys without asking: the merge
# gate itself, Claude Code's project settings, hooks, agents and MCP servers,
# editor tasks, direnv, git hook directories and submodules. A branch that
# changes one never lands through the queue: an agent could lower the gate for
# every later merge, or plant hooks that the user's own Claude Code runs. A
# person reviews it and merges it by hand.
GUARDED_PATHS = (
    ".agentdeck/",
    ".claude/",
    ".mcp.json",
    ".envrc",
    ".vscode/",
    ".devcontainer/",
    ".gitmodules",
    ".githooks/",
    ".husky/",
)


def guarded(paths: list[str]) -> list[str]:
    """The paths among ``paths`` (repository-relative) that only a person lands."""
    return [
        path
        for path in paths
        if any(
            path == g.rstrip("/") or (g.endswith("/") and path.startswith(g)) for g in GUARDED_PATHS
        )
    ]


def guarded_reason(branch: str, paths: list[str], repo: str) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (
        f"not merged: {branch} changes {shown}, which later sessions and merges run or obey "
        f"without asking; review the change and merge it by hand (git -C {repo} merge {branch})"
    )


# The entry's fields an outcome (``worktrees.merge.MergeOutcome``) has too.
_OUTCOME_FIELDS = frozenset({"branch", "target", "strategy", "reason", "commit", "test"})


@dataclass(frozen=True)
class MergeEntry:
    id: str
    agent_id: str
    repo: str  # the repository's top level: entries of one repository go one at a time
    branch: str
    target: str  # the branch to land on
    strategy: str
    test: str | None  # the command asked for; None: the target's .agentdeck/merge.yaml
    state: MergeState
    by: str  # who asked: "user:cli", "user:web", "agent:<id>"
    enqueued_at: float
    started_at: float | None = None
    finished_at: float | None = None
    owner_pid: int | None = None  # the process merging it
    owner_host: str | None = None  # the runner host merging it (a deck with hosts)
    reason: str | None = None  # the outcome in one line
    commit: str | None = None  # what the target now points at, when it landed
    outcome: dict[str, Any] = field(default_factory=dict)  # MergeOutcome.to_dict()

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["state"] = str(self.state)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MergeEntry:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["state"] = MergeState(values["state"])
        values["outcome"] = dict(values.get("outcome") or {})
        return cls(**values)

    @classmethod
    def from_result(cls, data: dict[str, Any]) -> MergeEntry:
        """The entry ``result()`` showed (what an API caller reads back): the
        outcome's fields are those beside the entry's, its test as shown."""
        own = {f.name for f in fields(cls)} - _OUTCOME_FIELDS
        outcome = {k: v for k, v in data.items() if k not in own} if "attempts" in data else {}
        return cls.from_dict({**data, "outcome": outcome})

    @property
    def landed(self) -> bool:
        return self.state is MergeState.LANDED

    def result(self) -> dict[str, Any]:
        """What an API caller is told: the entry, with its outcome's fields
        (conflicts, test output, attempts) alongside, and ``landed``; its test
        command scrubbed, like everything the deck shows."""
        data = self.to_dict()
        outcome = data.pop("outcome")
        return {**outcome, **data, "test": self.shown_test, "landed": self.landed}

    @property
    def shown_test(self) -> str | None:
        return None if self.test is None else scrub(self.test)

    def describe(self) -> str:
        """One line for a terminal: what, where, and how it stands."""
        test = f", test: {self.shown_test}" if self.test else ""
        head = f"{self.id[:8]}  {self.branch} → {self.target} ({self.strategy}{test})"
        host = f" on {self.owner_host}" if self.owner_host else ""
        return f"{head}  {self.state}{host}" + (f": {self.reason}" if self.reason else "")
