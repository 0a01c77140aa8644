"""Who may do what: users' roles, their names, token lifetimes. Pure.

Three roles, each including the one below it: a ``viewer`` reads, an ``operator``
also steers (starts, messages, interrupts, approves, answers), an ``admin`` also
manages users, tokens and profiles. What a request needs is decided at the edge
(``web/access.py``); whether a role has it is decided here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentdeck.errors import UsageError


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def allows(self, needed: Role) -> bool:
        """Whether a user of this role may do what needs ``needed``."""
        return self.rank >= needed.rank

    @classmethod
    def parse(cls, value: str) -> Role:
        try:
            return cls(value.strip().lower())
        except ValueError:
            names = ", ".join(r.value for r in cls)
            raise UsageError(f"unknown role {value!r}", hint=f"choose one of: {names}") from None


_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}

_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")


def check_user_name(name: str) -> str:
    """A user's name as it appears in the audit log: lower-case letters, digits,
    ``_ . -``, starting with a letter, at most 64 characters."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"invalid user name {name!r}",
            hint="use lower-case letters, digits, '_', '.' or '-', starting with a letter",
        )
    return name


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+)\s*([smhdw])")


def parse_duration(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` in seconds (more than zero)."""
    m = _DURATION.fullmatch(text.strip().lower())
    if m is None or int(m.group(1)) == 0:
        raise UsageError(
            f"invalid duration {text!r}", hint="write a number and a unit, e.g. 30d, 12h, 90m"
        )
    return float(int(m.group(1)) * _UNITS[m.group(2)])


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    created_at: float

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "role": str(self.role), "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> User:
        return cls(
            name=str(data["name"]), role=Role(data["role"]), created_at=float(data["created_at"])
        )


@dataclass(frozen=True)
class TokenInfo:
    """A token as the deck keeps it: never the secret itself."""

    id: str
    user: str
    name: str
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None

    def usable(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "user": self.user,
            "name": self.name,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenInfo:
        expires_at, revoked_at = data.get("expires_at"), data.get("revoked_at")
        return cls(
            id=str(data["id"]),
            user=str(data["user"]),
            name=str(data["name"]),
            created_at=float(data["created_at"]),
            expires_at=None if expires_at is None else float(expires_at),
            revoked_at=None if revoked_at is None else float(revoked_at),
        )


@dataclass(frozen=True)
class Principal:
    """Who is behind a request: the user, their role, and the token used."""

    user: str
    role: Role
    token_id: str
    expires_at: float | None = None

    def valid(self, now: float) -> bool:
        return self.expires_at is None or now < self.expires_at
