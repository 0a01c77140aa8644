"""A child never gets more than its parent: profiles intersected and compared. Pure.

``meet(parent, child)`` is what a child agent runs under: on every axis the
stricter of the two.

* sandbox: the stricter mode (off < bash < process), ``required`` if either
  requires it; writable only where both allow writing, ``deny_read`` and
  ``deny_write`` the union; network the stricter (off < allowlist < open) and,
  for an allowlist, only the domains both allow;
* rules: every deny rule of both, every ask rule of both (but a parent's where
  the child's default is deny: it would turn a denial into a question), the
  stricter default (deny > ask > allow), and the child's own allow rules: the
  Governor judges each call of a child under every ancestor's profile too, the
  strictest answer winning, so a parent's allow list bounds the child's where
  it is used (a static intersection of two allow lists would need to tell
  whether one rule covers another, and would lose ``Read(/**)`` under a parent
  that allows ``Read``);
* tools: the tools both enable, every tool either disables;
* budgets and the approval timeout: the smaller of each (a limit beats none).
* model endpoints: only those both allow, inline ones only if both do
  (``core.endpoints``).

``looser(child, parent)`` names each axis where a child's own profile would
give more than its parent's: its sandbox, network, writable places, hidden
places, default, tools, budgets or model endpoints. Rules are not compared (two
spellings of one rule cannot be told apart without running them): they are merged, and a
parent's rules also judge every call of its child. A spawn whose template
names a looser profile is refused, so a child never runs on a promise.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from enum import StrEnum
from typing import TypeVar

from agentdeck.core.endpoints import policy_looser, policy_meet
from agentdeck.core.policy_profile import Budgets, Decision, Profile
from agentdeck.core.policy_rules import Origin, Rule
from agentdeck.core.sandbox import NetworkMode, SandboxMode, SandboxSpec, domain_allowed

_MODES = {SandboxMode.OFF: 0, SandboxMode.BASH: 1, SandboxMode.PROCESS: 2}
_NETWORK = {NetworkMode.OFF: 0, NetworkMode.ALLOWLIST: 1, NetworkMode.OPEN: 2}
_DEFAULTS = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}  # how much it lets run
_BUDGETS = (
    "max_usd", "max_turns", "max_wall_seconds", "daily_usd",
    "max_consecutive_tool_errors", "max_repeated_calls",
)  # fmt: skip


E = TypeVar("E", bound=StrEnum)
N = TypeVar("N", int, float)


def _least(a: E, b: E, rank: dict[E, int]) -> E:
    return a if rank[a] <= rank[b] else b


# -- places and domains ---------------------------------------------------------------


def _place(path: str) -> str:
    """A sandbox path in its own notation (relative, ``~/…`` or absolute), normalized."""
    if path == "~" or path.startswith("~/"):
        rest = posixpath.normpath(path[2:]) if len(path) > 2 else "."
        return "~" if rest == "." else f"~/{rest}"
    return posixpath.normpath(path)


def _covers(outer: str, inner: str) -> bool:
    """Whether place ``outer`` holds place ``inner`` (only within one notation: a
    relative path and an absolute one are never taken to be the same place)."""
    a, b = _place(outer), _place(inner)
    if a == b:
        return True
    if a.startswith("/") != b.startswith("/") or a.startswith("~") != b.startswith("~"):
        return False
    if a in (".", "/"):
        return not b.startswith("..")
    return b.startswith(a + "/")


def _held(place: str, places: tuple[str, ...]) -> bool:
    return any(_covers(p, place) for p in places)


def _both_places(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The places both allow: each side's own places that the other side holds."""
    kept = [p for p in a if _held(p, b)] + [p for p in b if _held(p, a)]
    return tuple(dict.fromkeys(_place(p) for p in kept))


def _domain_held(domain: str, patterns: tuple[str, ...]) -> bool:
    if domain.startswith("*."):  # every name below it must be allowed
        below = domain[2:]
        return any(p == domain or (p.startswith("*.") and below.endswith(p[1:])) for p in patterns)
    return domain_allowed(domain, patterns)


def _both_domains(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    kept = [d for d in a if _domain_held(d, b)] + [d for d in b if _domain_held(d, a)]
    return tuple(dict.fromkeys(kept))


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


# -- the meet --------------------------------------------------------------------------


def _network(spec: SandboxSpec) -> NetworkMode:
    """The network a sandbox leaves: all of it when there is no sandbox."""
    return spec.network if spec.enabled else NetworkMode.OPEN


def sandbox_meet(a: SandboxSpec, b: SandboxSpec) -> SandboxSpec:
    """The stricter of two sandboxes on every axis (commutative up to the order of
    lists). A sandbox that is off confines nothing: the other one is the meet."""
    if a.enabled != b.enabled:
        return a if a.enabled else b
    network = _least(a.network, b.network, _NETWORK)
    if a.network is b.network:
        domains = _both_domains(a.allowed_domains, b.allowed_domains)
    elif network is NetworkMode.ALLOWLIST:  # the other side is open: this side's list
        domains = a.allowed_domains if a.network is NetworkMode.ALLOWLIST else b.allowed_domains
    else:
        domains = ()
    return SandboxSpec(
        mode=a.mode if _MODES[a.mode] >= _MODES[b.mode] else b.mode,
        required=a.required or b.required,
        allow_write=_both_places(a.allow_write, b.allow_write),
        deny_read=_union(a.deny_read, b.deny_read),
        deny_write=_union(a.deny_write, b.deny_write),
        network=network,
        allowed_domains=domains,
    )


def _smaller(a: N | None, b: N | None) -> N | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _budgets(a: Budgets, b: Budgets) -> Budgets:
    return Budgets(**{k: _smaller(getattr(a, k), getattr(b, k)) for k in _BUDGETS})


def _rules(a: tuple[Rule, ...], b: tuple[Rule, ...], above: str | None = None) -> tuple[Rule, ...]:
    """Both lists, ``a``'s first, each rule once; a rule of ``a`` that ``b`` does not
    hold is said to come from ``above`` (the parent's profile) unless it says where."""
    seen: dict[str, Rule] = {}
    mine = {rule.text: rule for rule in b}
    for rule in _inherited(a, above):
        if rule.text not in seen:
            seen[rule.text] = mine.get(rule.text, rule)
    for rule in b:
        seen.setdefault(rule.text, rule)
    return tuple(seen.values())


# A parent's lists, stamped, by (the list object, its profile's name): a tree's
# meet is made again on each call of a child, from the same parent's lists. The
# list is held with its entry, so its id is not reused while the entry is kept.
_STAMPED: dict[tuple[int, str], tuple[tuple[Rule, ...], tuple[Rule, ...]]] = {}
_STAMPED_KEPT = 1024


def _inherited(rules: tuple[Rule, ...], above: str | None) -> tuple[Rule, ...]:
    """``rules`` of the profile ``above``, each said to be inherited from it (a
    rule that already says where it comes from keeps it)."""
    if above is None or not rules:
        return rules
    found = _STAMPED.get((id(rules), above))
    if found is not None and found[0] is rules:
        return found[1]
    origin = Origin.inherited(above)
    stamped = tuple(r if r.origin is not None else r.by(origin) for r in rules)
    if len(_STAMPED) >= _STAMPED_KEPT:
        _STAMPED.clear()
    _STAMPED[(id(rules), above)] = (rules, stamped)
    return stamped


def _enabled(
    a: tuple[Rule, ...] | None, b: tuple[Rule, ...] | None, above: str
) -> tuple[Rule, ...] | None:
    if a is not None:
        a = _inherited(a, above)
    if a is None or b is None:
        return b if a is None else a
    kept = [r for r in a if any(o.covers_tool(r.tool) for o in b)]
    kept += [r for r in b if any(o.covers_tool(r.tool) for o in a)]
    return _rules(tuple(kept), ())


def meet(parent: Profile, child: Profile) -> Profile:
    """What ``child`` runs under below ``parent``: the stricter of both on every
    axis. It keeps the child's name (grants are keyed by it) and says where it
    comes from in ``source``."""
    return replace(
        child,
        default=_least(parent.default, child.default, _DEFAULTS),
        default_from=(parent.default_from or parent.name)
        if _DEFAULTS[parent.default] < _DEFAULTS[child.default]
        else child.default_from,
        deny=_rules(parent.deny, child.deny, parent.name),
        # A parent's ask rule would turn what the child denies by default into a
        # question a person may answer yes: not then (the parent's own verdict,
        # which the Governor also takes, still asks).
        ask=_rules(() if child.default is Decision.DENY else parent.ask, child.ask, parent.name),
        enabled_tools=_enabled(parent.enabled_tools, child.enabled_tools, parent.name),
        disabled_tools=_rules(parent.disabled_tools, child.disabled_tools, parent.name),
        budgets=_budgets(parent.budgets, child.budgets),
        approval_timeout_seconds=min(
            parent.approval_timeout_seconds, child.approval_timeout_seconds
        ),
        sandbox=sandbox_meet(parent.sandbox, child.sandbox),
        additional_directories=tuple(
            d for d in child.additional_directories if d in parent.additional_directories
        ),
        permission_mode=child.permission_mode
        if child.permission_mode == parent.permission_mode
        else None,
        endpoints=policy_meet(parent.endpoints, child.endpoints),
        config_dir="isolated" if "isolated" in (parent.config_dir, child.config_dir) else "shared",
        source=child.source
        if parent.source == child.source
        else f"{child.source} under {parent.name}",
    )


# -- looser --------------------------------------------------------------------------


def sandbox_looser(child: SandboxSpec, parent: SandboxSpec) -> list[str]:
    """Each way ``child`` confines less than ``parent`` (empty: it does not)."""
    out: list[str] = []
    if _MODES[child.mode] < _MODES[parent.mode]:
        out.append(f"its sandbox is {child.mode}, its parent's {parent.mode}")
    if parent.required and not child.required:
        out.append("its parent's sandbox is required, its own is not")
    mine, theirs = _network(child), _network(parent)
    if _NETWORK[mine] > _NETWORK[theirs]:
        out.append(f"its network is {mine}, its parent's {theirs}")
    elif mine is NetworkMode.ALLOWLIST and theirs is NetworkMode.ALLOWLIST:
        extra = [d for d in child.allowed_domains if not _domain_held(d, parent.allowed_domains)]
        if extra:
            out.append(f"it allows domains its parent does not: {', '.join(extra)}")
    if parent.enabled:
        wider = [p for p in child.allow_write if not _held(p, parent.allow_write)]
        if wider:
            out.append(f"it may write where its parent may not: {', '.join(wider)}")
        for kind in ("deny_read", "deny_write"):
            kept = {_place(p) for p in getattr(child, kind)}
            lost = [p for p in getattr(parent, kind) if _place(p) not in kept]
            if lost:
                out.append(f"its {kind} lacks its parent's {', '.join(lost)}")
    return out


def looser(child: Profile, parent: Profile) -> list[str]:
    """Each way ``child`` (a profile of its own) gives more than ``parent``;
    empty when it gives nothing more (rules aside: see the module doc)."""
    out = sandbox_looser(child.sandbox, parent.sandbox)
    if _DEFAULTS[child.default] > _DEFAULTS[parent.default]:
        out.append(f"its default is {child.default}, its parent's {parent.default}")
    if parent.enabled_tools is not None:
        if child.enabled_tools is None:
            out.append("it enables every tool, its parent only some")
        else:
            extra = [
                r.text
                for r in child.enabled_tools
                if not any(p.covers_tool(r.tool) for p in parent.enabled_tools)
            ]
            if extra:
                out.append(f"it enables tools its parent does not: {', '.join(extra)}")
    theirs = {r.text for r in child.disabled_tools}
    lost = [r.text for r in parent.disabled_tools if r.text not in theirs]
    if lost:
        out.append(f"it does not disable what its parent does: {', '.join(lost)}")
    for key in _BUDGETS:
        limit, mine = getattr(parent.budgets, key), getattr(child.budgets, key)
        if limit is not None and (mine is None or mine > limit):
            shown = "unlimited" if mine is None else mine
            out.append(f"its budget {key} is {shown}, its parent's {limit}")
    return out + policy_looser(child.endpoints, parent.endpoints)
