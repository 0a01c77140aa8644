"""A profile's ``sandbox`` block: what the OS lets an agent's processes do. Pure.

::

    sandbox:
      mode: process            # off | bash | process
      required: false          # true: never run an agent unsandboxed
      filesystem:
        allow_write: [".", "/tmp"]        # relative to the workspace (always writable)
        deny_read: ["~/.ssh", "~/.aws"]   # hidden: reads see nothing
        deny_write: [".git/hooks"]        # read-only even inside a writable place
      network:
        mode: allowlist        # off | allowlist | open
        allowed_domains: ["pypi.org", "*.pythonhosted.org"]

``process`` confines the whole Claude Code process (file tools, MCP servers,
hooks, subagents, every command); ``bash`` asks Claude Code to sandbox its Bash
commands itself. The model endpoint is always reachable, and agentdeck's own home
is never visible from inside (the adapter adds both). This module validates the
block and answers the questions that need no I/O: which domains are allowed,
where relative paths point.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from agentdeck.core.worktree import GitPlaces
from agentdeck.errors import PolicyError


class SandboxMode(StrEnum):
    OFF = "off"
    BASH = "bash"
    PROCESS = "process"


class NetworkMode(StrEnum):
    OFF = "off"  # nothing but the model endpoint
    ALLOWLIST = "allowlist"  # the model endpoint and allowed_domains, through a proxy
    OPEN = "open"  # the host's network as it is


# Secrets a process has no business reading, hidden unless a profile says otherwise.
DEFAULT_DENY_READ = (
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.gnupg",
    "~/.netrc",
    "~/.pgpass",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.docker/config.json",
    "~/.npmrc",
    "~/.pypirc",
)
# What a later session, unsandboxed, would run: git's hooks and config (hooksPath,
# fsmonitor), Claude Code's project settings, hooks, agents and commands, MCP
# servers, editor tasks, direnv. Protected where they exist when the agent starts.
DEFAULT_DENY_WRITE = (
    ".git/hooks",
    ".git/config",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/hooks",
    ".claude/agents",
    ".claude/commands",
    ".claude/skills",
    ".mcp.json",
    ".vscode",
    ".envrc",
)
_DOMAIN = re.compile(
    r"^(\*\.)?([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
)
_KEYS = ("mode", "required", "filesystem", "network")
_Fail = Callable[[str, str], PolicyError]
_FS_KEYS = ("allow_write", "deny_read", "deny_write")
_NET_KEYS = ("mode", "allowed_domains")


@dataclass(frozen=True)
class SandboxSpec:
    mode: SandboxMode = SandboxMode.OFF
    required: bool = False
    allow_write: tuple[str, ...] = (".",)
    deny_read: tuple[str, ...] = DEFAULT_DENY_READ
    deny_write: tuple[str, ...] = DEFAULT_DENY_WRITE
    network: NetworkMode = NetworkMode.ALLOWLIST
    allowed_domains: tuple[str, ...] = field(default=())

    @property
    def enabled(self) -> bool:
        return self.mode is not SandboxMode.OFF

    def with_git_dir(self, places: GitPlaces, *, workspace: str, home: str) -> SandboxSpec:
        """For an agent in a worktree: of its repository's git directory, only what
        its own commits write (``places``); the rest stays read-only, so it can move
        no other branch, nor plant config or hooks that agentdeck's git or a person's
        would run. A profile whose ``allow_write`` reaches into the git directory gets
        all of it read-only instead: the agent's own commits fail there, and its
        turns are still committed by agentdeck."""
        common = posixpath.normpath(places.common)
        for path in self.allow_write:
            place = absolute(path, workspace=workspace, home=home)
            if _overlap(place, common):
                return replace(self, deny_write=(*self.deny_write, common, *places.read_only))
        return replace(
            self,
            allow_write=(*self.allow_write, *places.writable),
            deny_write=(*self.deny_write, *places.read_only),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": str(self.mode),
            "required": self.required,
            "filesystem": {
                "allow_write": list(self.allow_write),
                "deny_read": list(self.deny_read),
                "deny_write": list(self.deny_write),
            },
            "network": {"mode": str(self.network), "allowed_domains": list(self.allowed_domains)},
        }

    def summary(self) -> str:
        """One line: ``process, network allowlist (3 domains), required``."""
        if not self.enabled:
            return "off"
        net = str(self.network)
        if self.network is NetworkMode.ALLOWLIST:
            count = len(self.allowed_domains)
            net += f" ({count} domain{'s' if count != 1 else ''})"
        return f"{self.mode}, network {net}" + (", required" if self.required else "")


def sandbox_from_dict(value: Any, source: str, line: int | None = None) -> SandboxSpec:
    """Validate a profile's ``sandbox`` block; ``PolicyError`` names what is wrong."""

    def fail(where: str, problem: str) -> PolicyError:
        return PolicyError(
            source, f"sandbox.{where}: {problem}" if where else f"sandbox: {problem}", line=line
        )

    if value is None or value == {}:
        return SandboxSpec()
    if not isinstance(value, Mapping):
        raise fail("", "must be a mapping (mode, required, filesystem, network)")
    _only(value, _KEYS, "", fail)
    mode = _choice(value.get("mode", "off"), SandboxMode, "mode", fail)
    required = value.get("required", False)
    if not isinstance(required, bool):
        raise fail("required", f"must be true or false, not {required!r}")
    fs = value.get("filesystem") or {}
    if not isinstance(fs, Mapping):
        raise fail("filesystem", "must be a mapping (allow_write, deny_read, deny_write)")
    _only(fs, _FS_KEYS, "filesystem", fail)
    net = value.get("network") or {}
    if not isinstance(net, Mapping):
        raise fail("network", "must be a mapping (mode, allowed_domains)")
    _only(net, _NET_KEYS, "network", fail)
    network = _choice(net.get("mode", "allowlist"), NetworkMode, "network.mode", fail)
    domains = _strings(net, "allowed_domains", "network", fail)
    for domain in domains:
        if not valid_domain(domain):
            raise fail(
                "network.allowed_domains",
                f"{domain!r} is not a host name, *.domain pattern or IP address",
            )
    if required and mode is SandboxMode.OFF:
        raise fail("required", "a sandbox cannot be required with mode off")
    return SandboxSpec(
        mode=mode,
        required=required,
        allow_write=_paths(fs, "allow_write", (".",), fail),
        deny_read=_paths(fs, "deny_read", DEFAULT_DENY_READ, fail),
        deny_write=_paths(fs, "deny_write", DEFAULT_DENY_WRITE, fail),
        network=network,
        allowed_domains=tuple(d.lower() for d in domains),
    )


def _only(data: Mapping[str, Any], keys: tuple[str, ...], where: str, fail: _Fail) -> None:
    for key in data:
        if key not in keys:
            raise fail(where.strip("."), f"unknown key `{key}` (known: {', '.join(keys)})")


def _choice(value: Any, enum: type[StrEnum], where: str, fail: _Fail) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise fail(
            where, f"must be one of {', '.join(e.value for e in enum)}, not {value!r}"
        ) from None


def _strings(data: Mapping[str, Any], key: str, where: str, fail: _Fail) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise fail(f"{where}.{key}", "must be a list of non-empty strings")
    return [v.strip() for v in value]


def _paths(
    data: Mapping[str, Any], key: str, default: tuple[str, ...], fail: _Fail
) -> tuple[str, ...]:
    if key not in data:
        return default
    paths = _strings(data, key, "filesystem", fail)
    for path in paths:
        if "\0" in path:
            raise fail(f"filesystem.{key}", "a path cannot hold a NUL byte")
    return tuple(paths)


def _overlap(one: str, other: str) -> bool:
    """Whether one of two normalised absolute paths is the other or inside it."""
    return (
        one == other
        or one.startswith(other.rstrip("/") + "/")
        or other.startswith(one.rstrip("/") + "/")
    )


def valid_domain(domain: str) -> bool:
    text = domain.strip().lower()
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    return len(text) <= 253 and bool(_DOMAIN.fullmatch(text))


def domain_allowed(host: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether ``host`` is one of ``patterns``: an exact name or address, or
    ``*.example.com`` for every name below ``example.com`` (not itself)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    for pattern in patterns:
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]) and name != pattern[2:]:
                return True
        elif name == pattern:
            return True
    return False


def absolute(path: str, *, workspace: str, home: str) -> str:
    """A sandbox path as an absolute, normalised one: ``~`` is the home, a
    relative path is relative to the workspace."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    elif not path.startswith("/"):
        path = posixpath.join(workspace, path)
    return posixpath.normpath(path)


_READ_ONLY = re.compile(r"read-only file system", re.IGNORECASE)
_WRITE_PATHS = (
    re.compile(r"Read-only file system: '([^'\n]+)'"),  # Python
    re.compile(r"EROFS: read-only file system, \w+ '([^'\n]+)'", re.IGNORECASE),  # Node
    re.compile(r"cannot \w+ (?:directory )?['\u2018\"]?(/[^'\u2019\"\n]+?)['\u2019\"]?: Read-only"),
    re.compile(r"(?<![\w'\u2018\"])(/[^\s'\u2018\u2019\":]+): Read-only file system"),
)


# Claude Code writes a file as ``NAME.tmp.<pid>.<hex>`` and renames it.
_ATOMIC_TEMP = re.compile(r"\.tmp\.\d+\.[0-9a-f]+$")


def blocked_writes(output: str) -> list[str]:
    """The paths a tool's output says a write was refused at because the file
    system is read-only (what a sandbox makes of the host); ``["?"]`` when it
    says so without a path."""
    if not _READ_ONLY.search(output):
        return []
    found: list[str] = []
    for pattern in _WRITE_PATHS:
        found += (_ATOMIC_TEMP.sub("", path) for path in pattern.findall(output))
    return list(dict.fromkeys(found)) or ["?"]
