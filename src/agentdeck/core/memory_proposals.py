"""Memories the agents write (issue 31, item 5). Pure: no I/O.

An agent calls the deck's ``remember(text, kind)`` tool to propose a learning
("this repo's tests need ``-p no:cacheprovider``"). The proposal waits in the
Memories inbox until a person accepts (possibly edits) or rejects it, unless
the agent's template says ``memory_review: auto``. Accepted memories are kept
per template and project and told to later agents of that template in that
project at their start, each with where it came from.

The text is the model's: hostile input. It is scrubbed of secrets before it is
kept, bounded (``TEXT_MAX_BYTES``), its kind one of ``KINDS``, and an agent may
have at most ``PENDING_PER_AGENT`` proposals waiting at once (a model that
floods the inbox is refused). It is data for the reviewer, never an instruction.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from agentdeck.core.redact import scrub
from agentdeck.errors import UsageError

KINDS = ("fact", "command", "convention", "pitfall", "preference")
TEXT_MAX_BYTES = 2048
PENDING_PER_AGENT = 5  # proposals one agent may have waiting at once
REVIEWS = ("inbox", "auto")  # a template's ``memory_review``
AUTO_REVIEWER = "template:auto"
LIST_MAX = 500
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_ID = re.compile(r"^mp[0-9a-f]{12}$")


class ProposalState(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


def new_proposal_id() -> str:
    import secrets

    return "mp" + secrets.token_hex(6)


def is_proposal_id(value: str) -> bool:
    return bool(_ID.fullmatch(value))


@dataclass(frozen=True, kw_only=True)
class MemoryProposal:
    """One memory an agent proposed, and what became of it.

    ``template`` is the proposing agent's template ("" for an agent run without
    one); ``project`` its absolute project directory (a worktree's repository)."""

    id: str
    agent_id: str
    template: str
    project: str
    kind: str
    text: str
    state: ProposalState
    created_at: float
    decided_at: float | None = None
    decided_by: str | None = None
    edited: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "agent_id": self.agent_id, "template": self.template,
            "project": self.project, "kind": self.kind, "text": self.text,
            "state": str(self.state), "created_at": self.created_at,
            "decided_at": self.decided_at, "decided_by": self.decided_by, "edited": self.edited,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryProposal:
        return cls(
            id=str(data["id"]),
            agent_id=str(data["agent_id"]),
            template=str(data.get("template") or ""),
            project=str(data["project"]),
            kind=str(data["kind"]),
            text=str(data["text"]),
            state=ProposalState(data["state"]),
            created_at=float(data["created_at"]),
            decided_at=None if data.get("decided_at") is None else float(data["decided_at"]),
            decided_by=data.get("decided_by"),
            edited=bool(data.get("edited", False)),
        )


# --- checking what a model (or a person) gives ---------------------------------------


def checked_kind(kind: Any) -> str:
    if not isinstance(kind, str) or kind.strip().lower() not in KINDS:
        raise UsageError(
            f"a memory's kind is one of {', '.join(KINDS)}",
            hint="say what sort of learning it is",
        )
    return kind.strip().lower()


def checked_text(text: Any) -> str:
    """The text as kept: control characters (escapes, bidi overrides) dropped, at
    most ``TEXT_MAX_BYTES`` of UTF-8, secrets redacted. Empty or too long: a
    ``UsageError`` (nothing is cut: the writer says it shorter)."""
    if not isinstance(text, str):
        raise UsageError("a memory's text is a string")
    if "\x00" in text:  # as the API refuses one in any text
        raise UsageError("a memory's text must not contain a NUL character")
    cleaned = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", " ")).strip()
    if not cleaned:
        raise UsageError("a memory's text is empty", hint="say the learning in a sentence")
    size = len(cleaned.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        raise UsageError(
            f"a memory's text is at most {TEXT_MAX_BYTES} bytes, not {size}",
            hint="say it shorter: one learning per memory",
        )
    return scrub(cleaned)


def checked_state(state: Any) -> ProposalState | None:
    """A listing's filter: a state, or ``all`` (None)."""
    if state in (None, "all"):
        return None
    try:
        return ProposalState(state)
    except ValueError:
        states = ", ".join([*ProposalState, "all"])
        raise UsageError(f"a memory's state is one of {states}, not {state!r}") from None


def checked_id(proposal_id: Any) -> str:
    if not isinstance(proposal_id, str) or not is_proposal_id(proposal_id):
        raise UsageError(
            f"not a memory id: {str(proposal_id)[:40]!r}",
            hint="ids look like mp0123456789ab (agentdeck memories pending)",
        )
    return proposal_id


def propose(
    *,
    agent_id: str,
    template: str | None,
    project: str,
    text: Any,
    kind: Any,
    auto: bool,
    now: float | None = None,
) -> MemoryProposal:
    """A new proposal, checked and scrubbed; accepted at once when ``auto``."""
    at = time.time() if now is None else now
    return MemoryProposal(
        id=new_proposal_id(),
        agent_id=agent_id,
        template=template or "",
        project=project,
        kind=checked_kind(kind),
        text=checked_text(text),
        state=ProposalState.ACCEPTED if auto else ProposalState.PENDING,
        created_at=at,
        decided_at=at if auto else None,
        decided_by=AUTO_REVIEWER if auto else None,
    )


def decided(
    proposal: MemoryProposal, state: ProposalState, *, by: str, now: float
) -> MemoryProposal:
    return replace(proposal, state=state, decided_at=now, decided_by=by)


TRUSTED_SCOPES = ("user", "built-in")  # where a template may waive review


def skips_review(memory_review: str | None, scope: str) -> bool:
    """Whether a template's agents' memories are accepted unreviewed: it says
    ``auto`` and it is a user's or a built-in one. A project's template is one the
    agent may have written itself (its project's ``.claude/agents``): reviewed."""
    return memory_review == "auto" and scope in TRUSTED_SCOPES


def parse_memory_review(value: Any, fail: Callable[[str | None, str], None]) -> str | None:
    """A template's ``memory_review``: inbox (a person reviews; the default) or auto."""
    if value is None:
        return None
    if value not in REVIEWS:
        fail("memory_review", f"must be one of {', '.join(REVIEWS)}")
        return None
    return str(value)


# --- telling later agents -------------------------------------------------------------

LEARNED_HEADING = (
    "Learned by earlier agents of this template in this project (agentdeck; each "
    "reviewed, with who wrote it and when):"
)
_CHARS_PER_TOKEN = 3.5


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def learned_entry(memory: MemoryProposal) -> str:
    text = memory.text.replace("\n", "\n  ")
    return f"- [{memory.kind}] {text} (from agent {memory.agent_id}, {_day(memory.created_at)})"


def build_learned(memories: Sequence[MemoryProposal], *, budget_tokens: int) -> str:
    """The accepted memories a new agent is told, newest first, whole entries only,
    within ``budget_tokens`` (counted as ``core.memory`` counts). "" for none."""
    lines = [LEARNED_HEADING]
    size = len(LEARNED_HEADING)
    for memory in sorted(memories, key=lambda m: m.created_at, reverse=True):
        if memory.state is not ProposalState.ACCEPTED:
            continue
        entry = learned_entry(memory)
        grown = size + 1 + len(entry)
        if math.ceil(grown / _CHARS_PER_TOKEN) > budget_tokens:
            continue  # a shorter, older one may still fit
        lines.append(entry)
        size = grown
    return "\n".join(lines) if len(lines) > 1 else ""
