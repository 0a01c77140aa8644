"""The audit log of permission decisions, as a hash chain. Pure: no I/O.

Every entry's ``hash`` is a SHA-256 over an explicit, versioned canonical form
of ALL its fields — its ``id`` and ``prev_hash`` included — and ``prev_hash`` is
the previous entry's ``hash`` (``GENESIS`` for entry 1). Ids are consecutive
from 1 (the store allocates ``last id + 1`` under the write lock). So:

- editing any field of entry k (without recomputing its hash) → reported at k
  (``EDITED``);
- editing entry k AND recomputing its hash → reported at k+1 (``BROKEN_LINK``);
- removing entries k..m (not at the tail) → reported at k, the first missing id
  (``REMOVED``);
- swapping or reordering entries' contents → reported at the first moved entry
  (its hash covers its id: ``EDITED``);
- appending a forged entry whose ``prev_hash`` is not the real head →
  ``BROKEN_LINK`` at that entry.

What a bare hash chain cannot show: removal of the newest entries (truncation)
and a consistent rewrite of everything from some entry on by someone with write
access to the database. Record ``VerifyResult.head`` somewhere else (or anchor
it periodically) to detect those.

Canonical form, version 1 (``FORMAT``): the UTF-8 bytes of the compact JSON
array ``["agentdeck-audit-v1", id, prev_hash, ts, agent_id, tool, input_digest,
decision, rule, reason, answered_by]`` (``ts`` as a float, ``null`` for absent
optional fields, no ASCII escaping). JSON types keep fields apart, so no two
different entries share a canonical form. A future format gets a new tag.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

FORMAT = "agentdeck-audit-v1"
GENESIS = "0" * 64


class AuditDecision(StrEnum):
    """What was decided: the policy's verdict, or the final answer to an "ask"."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
    ALLOWED = "allowed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, non-ASCII kept: equal data, equal text."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def input_digest(tool_input: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a tool input's canonical JSON."""
    return hashlib.sha256(canonical_json(tool_input).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One decision, as the caller reports it (no id or hashes yet).

    ``answered_by``: ``"policy"``, ``"user:cli"``, ``"user:web"``, ``"timeout"``...
    """

    ts: float
    agent_id: str
    tool: str
    input_digest: str
    decision: AuditDecision
    reason: str
    rule: str | None = None
    answered_by: str | None = None

    def __post_init__(self) -> None:
        # A bad value must fail here, not become an unverifiable entry.
        object.__setattr__(self, "decision", AuditDecision(self.decision))
        object.__setattr__(self, "ts", float(self.ts))
        if not math.isfinite(self.ts):
            raise ValueError(f"audit ts must be finite, not {self.ts}")

    @classmethod
    def for_input(
        cls,
        *,
        agent_id: str,
        tool: str,
        tool_input: Mapping[str, Any],
        decision: AuditDecision | str,
        reason: str,
        ts: float,
        rule: str | None = None,
        answered_by: str | None = None,
    ) -> AuditRecord:
        """A record for a raw tool input (digested here)."""
        return cls(
            ts=ts,
            agent_id=agent_id,
            tool=tool,
            input_digest=input_digest(tool_input),
            decision=AuditDecision(decision),
            reason=reason,
            rule=rule,
            answered_by=answered_by,
        )


@dataclass(frozen=True, kw_only=True)
class AuditEntry(AuditRecord):
    """A record as the log holds it: numbered and chained."""

    id: int
    prev_hash: str
    hash: str

    @property
    def record(self) -> AuditRecord:
        return AuditRecord(
            ts=self.ts,
            agent_id=self.agent_id,
            tool=self.tool,
            input_digest=self.input_digest,
            decision=self.decision,
            reason=self.reason,
            rule=self.rule,
            answered_by=self.answered_by,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["decision"] = str(self.decision)
        return data


def canonical_form(prev_hash: str, entry_id: int, record: AuditRecord) -> bytes:
    """The bytes ``entry_hash`` digests (format ``FORMAT``; see the module doc)."""
    fields = [
        FORMAT,
        int(entry_id),
        prev_hash,
        float(record.ts),
        record.agent_id,
        record.tool,
        record.input_digest,
        str(record.decision),
        record.rule,
        record.reason,
        record.answered_by,
    ]
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def entry_hash(prev_hash: str, entry_id: int, record: AuditRecord) -> str:
    return hashlib.sha256(canonical_form(prev_hash, entry_id, record)).hexdigest()


def seal(prev_hash: str, entry_id: int, record: AuditRecord) -> AuditEntry:
    """Number and chain ``record`` after the entry whose hash is ``prev_hash``."""
    fields = {k: getattr(record, k) for k in _RECORD_FIELDS}
    return AuditEntry(
        **fields, id=entry_id, prev_hash=prev_hash, hash=entry_hash(prev_hash, entry_id, record)
    )


_RECORD_FIELDS = (
    "ts",
    "agent_id",
    "tool",
    "input_digest",
    "decision",
    "reason",
    "rule",
    "answered_by",
)


class AuditProblem(StrEnum):
    EDITED = "edited"  # content differs from what its hash covers
    REMOVED = "removed"  # ids jump: entries are missing
    BROKEN_LINK = "broken_link"  # prev_hash is not the previous entry's hash
    OUT_OF_ORDER = "out_of_order"  # ids do not ascend


@dataclass(frozen=True)
class VerifyResult:
    """``ok`` with ``count`` entries and the chain's ``head`` hash, or the FIRST
    bad entry: ``entry_id``, ``problem`` and a ``message`` saying what is wrong.
    When broken, ``count`` and ``head`` describe the intact prefix."""

    ok: bool
    count: int
    head: str
    entry_id: int | None = None
    problem: AuditProblem | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "count": self.count,
            "head": self.head,
            "entry_id": self.entry_id,
            "problem": str(self.problem) if self.problem is not None else None,
            "message": self.message,
        }


class ChainVerifier:
    """Checks entries one at a time, in the order the log holds them (ascending
    id), keeping O(1) state, so a log of any length streams through it."""

    def __init__(self) -> None:
        self.count = 0
        self.head = GENESIS
        self.last_id = 0
        self.failure: VerifyResult | None = None

    def feed(self, entry: AuditEntry) -> VerifyResult | None:
        """The failure, if this entry is the first bad one; then stop feeding."""
        if self.failure is not None:
            return self.failure
        failure = self._check(entry)
        if failure is not None:
            self.failure = failure
            return failure
        self.count += 1
        self.head = entry.hash
        self.last_id = entry.id
        return None

    def result(self) -> VerifyResult:
        if self.failure is not None:
            return self.failure
        return VerifyResult(ok=True, count=self.count, head=self.head)

    def _fail(self, entry_id: int, problem: AuditProblem, message: str) -> VerifyResult:
        return VerifyResult(
            ok=False,
            count=self.count,
            head=self.head,
            entry_id=entry_id,
            problem=problem,
            message=message,
        )

    def _check(self, entry: AuditEntry) -> VerifyResult | None:
        expected_id = self.last_id + 1
        if entry.id < expected_id:
            return self._fail(
                entry.id,
                AuditProblem.OUT_OF_ORDER,
                f"entry {entry.id} comes after entry {self.last_id}: the log is reordered",
            )
        if entry.id > expected_id:
            missing = (
                f"entry {expected_id} is"
                if entry.id == expected_id + 1
                else f"entries {expected_id}-{entry.id - 1} are"
            )
            return self._fail(
                expected_id,
                AuditProblem.REMOVED,
                f"{missing} missing (the log jumps from {self.last_id} to {entry.id})",
            )
        if entry_hash(entry.prev_hash, entry.id, entry.record) != entry.hash:
            return self._fail(
                entry.id,
                AuditProblem.EDITED,
                f"entry {entry.id} was edited: its content does not match its hash",
            )
        if entry.prev_hash != self.head:
            before = f"entry {self.last_id}'s hash" if self.last_id else "the genesis hash"
            return self._fail(
                entry.id,
                AuditProblem.BROKEN_LINK,
                f"entry {entry.id}'s prev_hash is not {before}: it was inserted or "
                "reordered, or the entry before it was rewritten",
            )
        return None


def verify(entries: Iterable[AuditEntry]) -> VerifyResult:
    """Verify a whole chain (ascending id). Stops at the first bad entry."""
    verifier = ChainVerifier()
    for entry in entries:
        if verifier.feed(entry) is not None:
            break
    return verifier.result()
