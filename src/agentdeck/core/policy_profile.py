"""Profiles: ordered rule lists, tool sets, a default, budgets. Pure.

A profile as a mapping (what ``profile_from_dict`` validates; YAML files and
Claude Code ``settings.json`` are turned into one by ``governance.profiles``)::

    name: mine                       # optional: the file's stem; never a built-in's
    description: …                   # optional, free text
    default: ask                     # allow | ask | deny (when no rule matches)
    allow: [Read, "Bash(git status:*)"]
    ask: []
    deny: ["Read(~/.ssh/**)"]
    enabled_tools: [Bash, Read]      # optional: only these tools exist
    disabled_tools: [WebSearch]      # these tools do not exist
    budgets: {max_usd: 5, max_turns: 50, max_wall_seconds: 3600, daily_usd: 50,
              max_consecutive_tool_errors: 5, max_repeated_calls: 8}
    approval_timeout_seconds: 600    # an unanswered "ask" is denied after this
    sandbox: {mode: process}         # OS confinement (``core.sandbox``)
    additional_directories: []       # Claude Code's additionalDirectories, carried
    permission_mode: null            # Claude Code's defaultMode, carried
    model_endpoint: gateway          # endpoints.yaml's: when a template names none
    model_endpoints: [gateway]       # the only endpoints its agents may use
    inline_endpoints: false          # a template's own base_url (core.endpoints)
    config_dir: shared               # isolated: each agent its own CLAUDE_CONFIG_DIR
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import PurePath
from typing import Any

from agentdeck.core.endpoints import PROFILE_KEYS as ENDPOINT_KEYS
from agentdeck.core.endpoints import EndpointPolicy, endpoint_policy
from agentdeck.core.policy_rules import Origin, Rule
from agentdeck.core.quoting import key_shown, without_quotes
from agentdeck.core.sandbox import SandboxSpec, sandbox_from_dict
from agentdeck.errors import PolicyError

KeyPath = tuple[str | int, ...]


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True)
class Budgets:
    """Limits carried for the budget enforcer; ``None`` means unlimited."""

    max_usd: float | None = None
    max_turns: int | None = None
    max_wall_seconds: float | None = None
    daily_usd: float | None = None  # fleet-wide, per calendar day
    max_consecutive_tool_errors: int | None = None  # circuit breaker
    max_repeated_calls: int | None = None  # circuit breaker: same call again and again


@dataclass(frozen=True)
class Profile:
    name: str
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    enabled_tools: tuple[Rule, ...] | None = None  # None: every tool exists
    disabled_tools: tuple[Rule, ...] = ()
    default: Decision = Decision.ASK
    budgets: Budgets = field(default_factory=Budgets)
    approval_timeout_seconds: float = 600.0
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)
    additional_directories: tuple[str, ...] = ()
    permission_mode: str | None = None
    endpoints: EndpointPolicy = field(default_factory=EndpointPolicy)
    config_dir: str = "shared"  # isolated: runner.config_dirs
    description: str = ""
    source: str = "<memory>"
    default_from: str | None = None  # the ancestor's profile whose stricter default it is


_INT_BUDGETS = ("max_turns", "max_consecutive_tool_errors", "max_repeated_calls")
_FLOAT_BUDGETS = ("max_usd", "max_wall_seconds", "daily_usd")
PROFILE_KEYS = _KEYS = (
    "name", "description", "default", "allow", "ask", "deny", "enabled_tools", "disabled_tools",
    "budgets", "approval_timeout_seconds", "sandbox", "additional_directories", "permission_mode",
    *ENDPOINT_KEYS, "config_dir",
)  # fmt: skip


def profile_from_dict(
    data: Mapping[str, Any], source: str, *, lines: Mapping[KeyPath, int] | None = None
) -> Profile:
    """Validate ``data``; ``lines`` maps key paths (``("deny", 2)``) to 1-based lines."""
    v = _Validator(source, lines or {})
    if not isinstance(data, Mapping):
        raise v.error((), "a profile is a mapping of keys (name, allow, deny, …)")
    for key in data:
        if key not in _KEYS:
            raise v.error((key,), f"unknown key {key_shown(key)} (known: {', '.join(_KEYS)})")
    name = data.get("name", PurePath(source).stem or "profile")
    if not isinstance(name, str) or not name.strip():
        raise v.error(("name",), "`name` must be a non-empty string")
    default = data.get("default", "ask")
    if default not in tuple(Decision):
        raise v.error(("default",), "`default` must be allow, ask or deny")
    enabled = None
    if data.get("enabled_tools") is not None:
        enabled = v.rules(data, "enabled_tools", bare=True)
    sandbox = sandbox_from_dict(data.get("sandbox"), source, line=v.line_of(("sandbox",)))
    mode = data.get("permission_mode")
    if mode is not None and not isinstance(mode, str):
        raise v.error(("permission_mode",), "`permission_mode` must be a string")
    config_dir = data.get("config_dir", "shared")
    if config_dir not in ("shared", "isolated"):
        raise v.error(("config_dir",), "`config_dir` must be shared or isolated")
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise v.error(("description",), "`description` must be a string")
    return Profile(
        name=name.strip(),
        allow=v.rules(data, "allow"),
        ask=v.rules(data, "ask"),
        deny=v.rules(data, "deny"),
        enabled_tools=enabled,
        disabled_tools=v.rules(data, "disabled_tools", bare=True),
        default=Decision(default),
        budgets=v.budgets(data.get("budgets")),
        approval_timeout_seconds=v.number(
            ("approval_timeout_seconds",), data.get("approval_timeout_seconds", 600.0)
        ),
        sandbox=sandbox,
        additional_directories=v.strings(data, "additional_directories"),
        permission_mode=mode,
        endpoints=endpoint_policy(data, lambda key, why: v.error((key,), why)),
        config_dir=str(config_dir),
        description=description,
        source=source,
    )


def with_own_rules(
    profile: Profile,
    agent_id: str,
    *,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    tools: Sequence[str] = (),
    template: str | None = None,
    deck: tuple[Rule, ...] = (),
) -> Profile:
    """``profile`` with an agent's own rules, each said to be the agent's
    (``Origin.agent``): its ``allow`` after the profile's, then ``deck`` (agentdeck's
    own rules, after every deny and ask rule, so a profile can still refuse them);
    its ``deny`` after the profile's; ``tools`` (its template's list, or its own)
    as the tools it has, within those the profile enables, ``deck`` among them."""
    mine, where = Origin.agent(agent_id), f"agent {agent_id}"
    enabled = profile.enabled_tools
    if tools:
        listing = Origin.template(template) if template else mine
        source = f"template {template or agent_id}"
        listed = tuple(Rule.parse(t.split("(")[0], source=source).by(listing) for t in tools)
        enabled = (
            listed
            if enabled is None
            else tuple(r for r in listed if any(e.covers_tool(r.tool) for e in enabled))
        )
    return replace(
        profile,
        allow=(*profile.allow, *(Rule.parse(r, source=where).by(mine) for r in allow), *deck),
        deny=(*profile.deny, *(Rule.parse(r, source=where).by(mine) for r in deny)),
        enabled_tools=enabled if enabled is None else (*enabled, *deck),
    )


class _Validator:
    def __init__(self, source: str, lines: Mapping[KeyPath, int]) -> None:
        self.source, self.lines = source, lines

    def line_of(self, path: KeyPath) -> int | None:
        for k in range(len(path), -1, -1):  # the nearest enclosing node with a line
            line = self.lines.get(path[:k])
            if line is not None:
                return line
        return None

    def error(self, path: KeyPath, problem: str) -> PolicyError:
        return PolicyError(self.source, problem, line=self.line_of(path))

    def _list(self, data: Mapping[str, Any], key: str) -> list[Any]:
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise self.error((key,), f"`{key}` must be a list")
        return list(value)

    def strings(self, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
        items = self._list(data, key)
        for k, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error((key, k), f"`{key}` entries must be strings")
        return tuple(items)

    def rules(self, data: Mapping[str, Any], key: str, *, bare: bool = False) -> tuple[Rule, ...]:
        out = []
        for k, text in enumerate(self.strings(data, key)):
            try:
                rule = Rule.parse(text)
            except PolicyError as exc:
                raise self.error((key, k), f"in `{key}`: {without_quotes(exc.problem)}") from None
            if bare and not rule.is_bare:
                raise self.error((key, k), f"`{key}` lists tool names, not rules")
            out.append(rule)
        return tuple(out)

    def number(self, path: KeyPath, value: Any, *, integer: bool = False) -> float:
        ok = isinstance(value, int) if integer else isinstance(value, int | float)
        if isinstance(value, bool) or not ok or value <= 0:
            kind = "a positive integer" if integer else "a positive number"
            raise self.error(path, f"`{path[-1]}` must be {kind}")
        return float(value)

    def budgets(self, value: Any) -> Budgets:
        if value is None:
            return Budgets()
        if not isinstance(value, Mapping):
            raise self.error(("budgets",), "`budgets` must be a mapping")
        known = (*_FLOAT_BUDGETS, *_INT_BUDGETS)
        found: dict[str, Any] = {}
        for key, item in value.items():
            if key not in known:
                raise self.error(
                    ("budgets", key), f"unknown budget {key_shown(key)} ({', '.join(known)})"
                )
            if item is None:
                continue
            number = self.number(("budgets", key), item, integer=key in _INT_BUDGETS)
            found[key] = int(number) if key in _INT_BUDGETS else number
        return Budgets(**found)
