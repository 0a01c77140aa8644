"""The records the Deck's knowledge part answers with (``core.deck.knowledge``), in
the wire form the API gives them: the agent templates a project sees, a policy
check's verdict, a built-in profile in a line, a memory record whole, a budget.

Pure: no I/O. The daemon's Deck builds them; ``RemoteDeck`` rebuilds them from the
API's JSON with ``from_dict``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agentdeck.core.memory import MemoryKind, Observation, SessionSummary
from agentdeck.core.policy_profile import Decision
from agentdeck.core.templates import Template
from agentdeck.core.usage import Budget, BudgetScope, check_budget
from agentdeck.errors import UsageError

MemoryRecord = Observation | SessionSummary
MAX_SEARCH_LIMIT = 100  # the most hits a memory search answers with


@dataclass(frozen=True)
class TemplateCatalog:
    """The agent templates visible from a project (sorted by name), and the messages
    of the files that did not load (those are not usable)."""

    templates: tuple[Template, ...] = ()
    invalid: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "templates": [t.to_dict() for t in self.templates],
            "invalid": [{"message": m} for m in self.invalid],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TemplateCatalog:
        return cls(
            templates=tuple(Template.from_dict(t) for t in data["templates"]),
            invalid=tuple(str(e["message"]) for e in data.get("invalid", [])),
        )


@dataclass(frozen=True)
class PolicyCheck:
    """What a tool call gets under a profile, and why: the rule that decided (None
    for the profile's default), where it comes from, the profile and its sandbox."""

    decision: Decision
    reason: str
    rule: str | None
    source: str
    profile: str
    profile_source: str
    sandbox: dict[str, Any]
    sandbox_summary: str

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "decision": str(self.decision)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyCheck:
        fields = {f.name: data[f.name] for f in dataclasses.fields(cls)}
        return cls(**{**fields, "decision": Decision(data["decision"])})


@dataclass(frozen=True)
class ProfileSummary:
    """A built-in policy profile in a line: its name, default decision, description."""

    name: str
    default: Decision
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "default": str(self.default), "description": self.description}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileSummary:
        return cls(str(data["name"]), Decision(data["default"]), str(data["description"]))


def record_to_dict(record: MemoryRecord) -> dict[str, Any]:
    """A memory record as the API, the CLI's ``--json`` and the MCP server give it:
    its fields and ``kind``; tuples as lists."""
    kind = MemoryKind.OBSERVATION if isinstance(record, Observation) else MemoryKind.SUMMARY
    out: dict[str, Any] = {"kind": str(kind)}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def record_from_dict(data: dict[str, Any]) -> MemoryRecord:
    fields: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "kind"
    }
    if data.get("kind") == MemoryKind.SUMMARY:
        return SessionSummary(**fields)
    return Observation(**fields)


def search_limit(limit: int) -> int:
    """A memory search's ``limit``, or the ``UsageError`` that says what it may be."""
    if isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise UsageError(f"a search limit is between 1 and {MAX_SEARCH_LIMIT}, not {limit!r}")
    return limit


def forget_selector(
    memory_id: str | None, session_id: str | None, project: str | None
) -> tuple[str, str]:
    """What a forget names (``memory_id``, ``session_id`` or ``project``) and its
    value: exactly one of them, else a ``UsageError`` (nothing is forgotten)."""
    named = (("memory_id", memory_id), ("session_id", session_id), ("project", project))
    given = [(key, value) for key, value in named if value is not None]
    if len(given) != 1:
        raise UsageError(
            "forget needs exactly one of a memory id, a session id or a project",
            hint=f"{len(given)} were given",
        )
    return given[0]


def budget_args(scope: str, name: str, daily_usd: float) -> tuple[BudgetScope, str, float]:
    """A budget as given (``core.usage.check_budget``), a name with a NUL refused too:
    no user or directory is called so."""
    if isinstance(name, str) and "\x00" in name:
        raise UsageError("a budget's name must not contain a NUL character")
    return check_budget(scope, name, daily_usd)


def budget_to_dict(budget: Budget) -> dict[str, Any]:
    return dataclasses.asdict(budget)


def budget_from_dict(data: dict[str, Any]) -> Budget:
    return Budget(
        str(data["scope"]),
        str(data["name"]),
        float(data["daily_usd"]),
        float(data.get("spent_today_usd", 0.0)),
    )
