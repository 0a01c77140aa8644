"""Notifications as the deck reports them: each target and how its deliveries went,
a test sent to one, and the dead letters (what no attempt delivered). Pure records,
read back from the API's JSON with ``from_dict`` as ``to_dict`` wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEAD = "dead"
REPLAYED = "replayed"


@dataclass(frozen=True)
class Deliveries:
    """How a running target's deliveries went since the daemon started."""

    queued: int = 0
    delivered: int = 0
    dead: int = 0
    skipped: int = 0
    last_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "queued": self.queued,
            "delivered": self.delivered,
            "dead": self.dead,
            "skipped": self.skipped,
            "last_error": self.last_error,
        }


@dataclass(frozen=True)
class TargetStatus:
    """A configured target as it may be shown: no secret, of a URL only its origin
    (``core.notify.Target.describe``). ``available``: whether a desktop target's
    notify-send is there (None for the other kinds); ``deliveries``: None until the
    daemon's notifier runs the target."""

    name: str
    kind: str
    url: str | None
    signed: bool
    events: tuple[str, ...]
    projects: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    available: bool | None = None
    deliveries: Deliveries | None = None

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "url": self.url,
            "signed": self.signed,
            "events": list(self.events),
            "filters": {
                "projects": list(self.projects),
                "agents": list(self.agents),
                "templates": list(self.templates),
            },
        }
        if self.available is not None:
            row["available"] = self.available
        if self.deliveries is not None:
            row.update(self.deliveries.to_dict())
        return row

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetStatus:
        filters = data.get("filters") or {}
        deliveries = None
        if "delivered" in data:
            deliveries = Deliveries(
                queued=int(data.get("queued", 0)),
                delivered=int(data["delivered"]),
                dead=int(data.get("dead", 0)),
                skipped=int(data.get("skipped", 0)),
                last_error=data.get("last_error"),
            )
        return cls(
            name=str(data["name"]),
            kind=str(data["kind"]),
            url=data.get("url"),
            signed=bool(data.get("signed", False)),
            events=tuple(data.get("events") or ()),
            projects=tuple(filters.get("projects") or ()),
            agents=tuple(filters.get("agents") or ()),
            templates=tuple(filters.get("templates") or ()),
            available=data.get("available"),
            deliveries=deliveries,
        )


@dataclass(frozen=True)
class TestSent:
    """A test notification the target took (one that fails raises ``DeliveryFailed``)."""

    __test__ = False  # not a pytest test class, whatever its name

    target: str
    kind: str
    delivered: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "delivered": self.delivered, "kind": self.kind}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestSent:
        return cls(
            target=str(data["target"]), kind=str(data["kind"]), delivered=bool(data["delivered"])
        )


@dataclass(frozen=True)
class DeadLetter:
    """A notification no attempt delivered (or its target's queue was full): ``dead``
    until a replay delivers it (``replayed``). What it says and carries is scrubbed."""

    id: str
    target: str
    kind: str
    payload: dict[str, Any]
    reason: str
    attempts: int
    state: str
    created_at: float
    replayed_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.target,
            "kind": self.kind,
            "payload": self.payload,
            "reason": self.reason,
            "attempts": self.attempts,
            "state": self.state,
            "created_at": self.created_at,
            "replayed_at": self.replayed_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeadLetter:
        replayed_at = data.get("replayed_at")
        return cls(
            id=str(data["id"]),
            target=str(data["target"]),
            kind=str(data["kind"]),
            payload=dict(data["payload"]),
            reason=str(data["reason"]),
            attempts=int(data["attempts"]),
            state=str(data["state"]),
            created_at=float(data["created_at"]),
            replayed_at=None if replayed_at is None else float(replayed_at),
        )
