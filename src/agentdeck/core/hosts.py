"""Runner hosts and their leases on agents (issue 30, item 3). Pure records.

A runner host registers under a name, heartbeats, and claims agents: each claim
is a ``Lease`` on one agent with a **fencing token** that only ever grows for
that agent. A host writes for an agent only while it holds the lease with the
token it was given (``HostStore.holds``); once the lease has expired (the host
stopped heartbeating past ``runner_lease_seconds``) or another host has claimed
the agent with a larger token, the old holder is fenced: its late writes are
refused and it must stop that agent's Claude Code process.

What a host says about itself (name, labels, project roots) is checked here:
a name or label is a short plain word, a project root an absolute path, none
with control characters (they end up on terminals and in the dashboard).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, fields
from typing import Any

from agentdeck.core.agent import AgentSpec
from agentdeck.errors import UsageError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:=/-]{0,63}")
MAX_LABELS = 32
MAX_ROOTS = 32
MAX_TEXT = 255
MAX_CAPACITY = 10_000
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _plain(what: str, value: str) -> str:
    if _CONTROL.search(value):
        raise UsageError(f"{what} {value!r} has control characters")
    return value


def check_name(name: str) -> str:
    """A host's name: 1-64 of letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        _plain("the host name", str(name))
        raise UsageError(
            f"bad host name {name!r}",
            hint="1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return name


def check_label(label: str) -> str:
    if not isinstance(label, str):
        raise UsageError(f"a label is text, not {type(label).__name__}")
    _plain("the label", label)
    if LABEL.fullmatch(label) is None:
        raise UsageError(
            f"bad label {label!r}",
            hint="1-64 letters, digits, '.', '_', ':', '=', '/' or '-', starting with a "
            "letter or digit",
        )
    return label


def check_root(root: str) -> str:
    if not isinstance(root, str):
        raise UsageError(f"a project root is a path, not {type(root).__name__}")
    _plain("the project root", root)
    if not root.startswith("/") or len(root) > 4096:
        raise UsageError(f"project root {root!r} is not an absolute path")
    return root


def check_capacity(capacity: int) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise UsageError(f"a host's capacity is a whole number, not {capacity!r}")
    if not 0 <= capacity <= MAX_CAPACITY:
        raise UsageError(
            f"a host's capacity must be 0-{MAX_CAPACITY} agents, not {capacity}",
            hint="0 registers a host that claims nothing (draining)",
        )
    return capacity


@dataclass(frozen=True)
class Host:
    """A runner host as it registered. Times are the database's clock (epoch s)."""

    name: str
    hostname: str = ""
    pid: int = 0
    version: str = ""
    capacity: int = 1
    labels: list[str] = field(default_factory=list)
    project_roots: list[str] = field(default_factory=list)
    started_at: float = 0.0
    heartbeat_at: float = 0.0
    stopped_at: float | None = None
    epoch: int = 0  # grows at each registration: one life of the host

    def checked(self) -> Host:
        """This host, or ``UsageError`` saying what is wrong with it."""
        check_name(self.name)
        check_capacity(self.capacity)
        for what, text in (("hostname", self.hostname), ("version", self.version)):
            if not isinstance(text, str) or len(text) > MAX_TEXT:
                raise UsageError(f"the host's {what} is text of at most {MAX_TEXT} characters")
            _plain(f"the host's {what}", text)
        if len(self.labels) > MAX_LABELS or len(self.project_roots) > MAX_ROOTS:
            raise UsageError(f"at most {MAX_LABELS} labels and {MAX_ROOTS} project roots")
        for label in self.labels:
            check_label(label)
        for root in self.project_roots:
            check_root(root)
        if isinstance(self.pid, bool) or not isinstance(self.pid, int) or self.pid < 0:
            raise UsageError(f"bad pid {self.pid!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            "labels": list(self.labels),
            "project_roots": list(self.project_roots),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Host:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["labels"] = list(values.get("labels") or [])
        values["project_roots"] = list(values.get("project_roots") or [])
        return cls(**values)


@dataclass(frozen=True)
class Lease:
    """One host's claim on one agent. ``token`` is the fencing token: it grows by
    one at each claim of the agent, whoever claims it."""

    agent_id: str
    host: str
    token: int
    claimed_at: float
    renewed_at: float
    expires_at: float
    released_at: float | None = None

    def live(self, now: float) -> bool:
        return self.released_at is None and self.expires_at > now

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lease:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def place_of(spec: AgentSpec) -> str | None:
    """Where the agent works, as a host must reach it: its cwd, else (for a
    worktree) its project, the repository; None for an agent in a workspace of
    its own (its project then only says where its templates come from)."""
    if spec.cwd:
        return spec.cwd
    return spec.project if spec.workspace == "worktree" and spec.project else None


def unfit(host: Host, spec: AgentSpec) -> str | None:
    """Why ``host`` cannot run an agent of ``spec`` (None: it fits): a label the
    agent needs that the host lacks, or a place outside the host's project roots."""
    missing = [label for label in spec.labels if label not in host.labels]
    if missing:
        return f"host {host.name} lacks the label(s) {', '.join(missing)}"
    place = place_of(spec)
    if place is None:
        return None
    if not place.startswith("/"):
        return f"{place!r} is not an absolute path"
    where = posixpath.normpath(place)
    for root in host.project_roots:
        top = posixpath.normpath(root)
        if top == "/" or where == top or where.startswith(top + "/"):
            return None
    return f"{where} is under none of host {host.name}'s project roots"
