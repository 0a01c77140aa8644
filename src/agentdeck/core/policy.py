"""The policy engine: may this tool call run? Pure and deterministic.

``decide`` answers allow, ask or deny, with a human reason and the rule that made
the decision. Order:

1. a tool outside the profile's ``enabled_tools`` (when set) or matching
   ``disabled_tools`` does not exist: deny;
2. deny rules (the profile's, then remembered deny grants) — the first match;
3. ask rules;
4. allow rules (the profile's, then remembered allow grants);
5. the profile's default (``ask`` unless set).

A Bash line is judged per simple command (``bash_split``): a deny or ask on any
sub-command wins, and an allow needs every sub-command allowed (by the same or
different rules). Sub-commands no rule allows fall to the default. A call that
cannot be judged with confidence — a command the splitter does not understand,
an input without its path, command or url — is never allowed by a specifier
rule, nor by an ``allow`` default: a bare rule (``Bash``) still allows it when
no specifier deny/ask rule for that tool could have been dodged; otherwise the
answer is ``deny`` if the profile defaults to deny, else ``ask``.

Unlike Claude Code in ``-p`` mode, read-only commands are not auto-allowed: a
profile lists them (the shipped ``default`` does). Rule syntax and matching are
described in ``policy_rules`` and ``policy_paths``; profiles in
``policy_profile``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdeck.core.policy_profile import Budgets, Decision, KeyPath, Profile, profile_from_dict
from agentdeck.core.policy_rules import Rule, Unit
from agentdeck.core.policy_screen import Screen, screen_of
from agentdeck.core.policy_secrets import WHY as SECRETS_WHY
from agentdeck.core.policy_secrets import SecretRule
from agentdeck.core.policy_subject import Subject, analyze, rule_for, rules_for
from agentdeck.errors import PolicyError

__all__ = [
    "Budgets",
    "Decision",
    "Grant",
    "KeyPath",
    "PolicyError",
    "Profile",
    "Rule",
    "Verdict",
    "decide",
    "profile_from_dict",
    "rule_for",
    "rules_for",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reason: str  # never empty
    rule: str | None  # the rule that decided; None for the default and enabled_tools
    # Where the deciding rule came from: "profile:<name>" (the agent's profile, or
    # its parent's when the reason says so), "agent:<id>" (its own --allow /
    # --deny), "template:<name>" (its tool list), "agentdeck" (the deck's own
    # rules), "grant"; several joined by " + ".
    source: str


@dataclass(frozen=True)
class Grant:
    """A remembered answer: ``rule`` allowed or denied from now on."""

    rule: str
    decision: Decision
    parsed: Rule = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.decision not in (Decision.ALLOW, Decision.DENY):
            raise PolicyError("grant", f"a grant allows or denies, not {self.decision!r}")
        object.__setattr__(self, "decision", Decision(self.decision))
        object.__setattr__(self, "parsed", Rule.parse(self.rule, source="grant"))


@dataclass(frozen=True)
class _Entry:
    rule: Rule
    source: str
    where: str  # "in the deny list of profile x", "by a remembered grant"


def decide(
    profile: Profile,
    tool: str,
    tool_input: Mapping[str, Any],
    *,
    workspace: str,
    home: str,
    grants: Sequence[Grant] = (),
) -> Verdict:
    """The decision for one call of ``tool`` with ``tool_input`` (see the module doc)."""
    workspace, home = _absolute(workspace, "workspace"), _absolute(home, "home")
    src, name = f"profile:{profile.name}", profile.name
    if profile.enabled_tools is not None and not any(
        r.covers_tool(tool) for r in profile.enabled_tools
    ):
        return _not_enabled(profile, tool)
    for rule in profile.disabled_tools:
        if rule.covers_tool(tool):
            if rule.origin is None:
                why = f"`{tool}` is disabled by profile {name} (`{rule.text}`)"
                return Verdict(Decision.DENY, why, rule.text, src)
            why = f"`{tool}` is disabled: `{rule.text}` {rule.origin.where('disabled_tools')}"
            return Verdict(Decision.DENY, why, rule.text, rule.origin.source)

    tiers, screens = _tiers(profile, tool, tuple(grants))
    subject = analyze(tool, tool_input, workspace=workspace, home=home)
    ws = workspace
    units = subject.units or (Unit(label=tool),)
    for kind, verb in ((Decision.DENY, "denied"), (Decision.ASK, "needs approval")):
        for unit in units:
            for e in screens[kind].walk(unit, unit.deny_texts, workspace=ws, home=home):
                if e.rule.matches(tool, unit, allow=False, workspace=ws, home=home):
                    what = _what(subject, unit)
                    return Verdict(
                        kind, f"{what} {verb}: `{e.rule.text}` {e.where}", e.rule.text, e.source
                    )

    if subject.problem is not None:
        return _unsure(profile, subject, subject.problem, tiers, src)
    allowed: list[tuple[Unit, _Entry]] = []
    for unit in units:
        walk = screens[Decision.ALLOW].walk(unit, unit.allow_texts, workspace=ws, home=home)
        hit = next(
            (e for e in walk if e.rule.matches(tool, unit, allow=True, workspace=ws, home=home)),
            None,
        )
        if hit is None:
            what = _what(subject, unit)
            why = f"no rule allows {what}; {_defaults(profile)}"
            return Verdict(profile.default, why, None, _default_source(profile))
        allowed.append((unit, hit))
    rules = list(dict.fromkeys(e.rule.text for _, e in allowed))
    sources = list(dict.fromkeys(e.source for _, e in allowed))
    if len(allowed) == 1:
        unit, e = allowed[0]
        why = f"{_what(subject, unit)} allowed: `{e.rule.text}` {e.where}"
    else:
        parts = "; ".join(f"`{u.label}` by `{e.rule.text}`" for u, e in allowed)
        why = f"every sub-command is allowed: {parts}"
    return Verdict(Decision.ALLOW, why, ", ".join(rules), " + ".join(sources))


# The rules that can apply to a tool, per tier, by (profile object, tool, grants):
# only a rule covering the call's tool can match it (``Rule.matches`` asks
# ``covers_tool`` first), so a profile judged again and again (a replay's, one
# object per kind of agent) neither rebuilds nor walks the others. The profile is
# held with its entry, so its id is not reused while the entry is kept.
#
# With them, per tier, its screen (``policy_screen``): the rules a unit may match.
_TierKey = tuple[int, str, tuple[Grant, ...]]
_Tiers = Mapping[Decision, list[_Entry]]
_Screens = Mapping[Decision, Screen[_Entry]]
_TIERS: dict[_TierKey, tuple[Profile, _Tiers, _Screens]] = {}
_TIERS_KEPT = 256


def _tiers(profile: Profile, tool: str, grants: tuple[Grant, ...]) -> tuple[_Tiers, _Screens]:
    key = (id(profile), tool, grants)
    found = _TIERS.get(key)
    if found is not None and found[0] is profile:
        return found[1], found[2]
    src, name = f"profile:{profile.name}", profile.name

    def entry(r: Rule, kind: Decision) -> _Entry:
        if r.origin is not None:  # not the profile's own: an agent's, a parent's, the deck's
            return _Entry(r, r.origin.source, r.origin.where(kind))
        if isinstance(r, SecretRule):  # made without an origin: still the deck's
            return _Entry(r, "agentdeck", SECRETS_WHY)
        return _Entry(r, src, f"in the {kind} list of profile {name}")

    def entries(rules: Sequence[Rule], kind: Decision) -> list[_Entry]:
        own = [entry(r, kind) for r in rules if r.covers_tool(tool)]
        remembered = [
            _Entry(g.parsed, "grant", f"by a remembered {kind} grant")
            for g in grants
            if g.decision == kind and g.parsed.covers_tool(tool)
        ]
        return own + remembered

    tiers = {
        Decision.DENY: entries(profile.deny, Decision.DENY),
        Decision.ASK: entries(profile.ask, Decision.ASK),
        Decision.ALLOW: entries(profile.allow, Decision.ALLOW),
    }
    screens = {kind: screen_of(entries) for kind, entries in tiers.items()}
    if len(_TIERS) >= _TIERS_KEPT:
        _TIERS.clear()
    _TIERS[key] = (profile, tiers, screens)
    return tiers, screens


def _unsure(
    profile: Profile,
    subject: Subject,
    problem: str,
    tiers: Mapping[Decision, Sequence[_Entry]],
    src: str,
) -> Verdict:
    tool = subject.tool
    guarded = any(
        not e.rule.is_bare and e.rule.covers_tool(tool)
        for kind in (Decision.DENY, Decision.ASK)
        for e in tiers[kind]
    )
    if not guarded:
        for e in tiers[Decision.ALLOW]:
            if e.rule.is_bare and e.rule.covers_tool(tool):
                why = f"`{tool}` allowed: `{e.rule.text}` {e.where} (although {problem})"
                return Verdict(Decision.ALLOW, why, e.rule.text, e.source)
    decision = Decision.DENY if profile.default is Decision.DENY else Decision.ASK
    if decision is Decision.DENY:
        then, src = _defaults(profile), _default_source(profile)
    else:
        then = f"profile {profile.name} asks"
    why = (
        f"this `{tool}` call cannot be judged with confidence ({problem}), so no rule"
        f" allows it; {then}"
    )
    return Verdict(decision, why, None, src)


def _defaults(profile: Profile) -> str:
    """What the profile defaults to, and whose default it is: its own, or that of
    the profile above it (an ancestor's, stricter)."""
    said = f"profile {profile.name} defaults to {profile.default}"
    if profile.default_from is not None:
        said += f", inherited from profile {profile.default_from} above it"
    return said


def _default_source(profile: Profile) -> str:
    return f"profile:{profile.default_from or profile.name}"


def _not_enabled(profile: Profile, tool: str) -> Verdict:
    """The denial of a tool the enabled list lacks, naming whose lists made it."""
    enabled = profile.enabled_tools or ()
    shown = ", ".join(r.text for r in enabled) or "none"
    origins = [r.origin for r in enabled if r.origin is not None and r.origin.fixed is None]
    if not origins:
        why = f"`{tool}` is not one of the tools profile {profile.name} enables ({shown})"
        return Verdict(Decision.DENY, why, None, f"profile:{profile.name}")
    # A template's list is met with the profile's (and a parent's): each bounds it.
    whose = " and ".join(dict.fromkeys([f"profile {profile.name}", *(o.owner for o in origins)]))
    sources = [f"profile:{profile.name}", *(o.source for o in origins)]
    why = f"`{tool}` is not one of the tools enabled for this agent ({shown}; by {whose})"
    return Verdict(Decision.DENY, why, None, " + ".join(dict.fromkeys(sources)))


def _what(subject: Subject, unit: Unit) -> str:
    if subject.tool == "Bash":
        many = len(subject.units) > 1
        return f"{'sub-command' if many else 'command'} `{unit.label}`"
    if unit.label == subject.tool:
        return f"`{subject.tool}`"
    return f"`{subject.tool}` of `{unit.label}`"


def _absolute(path: str, what: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"the {what} must be an absolute path, not {path!r}")
    if "//" not in path and "/." not in path and not path.endswith("/"):
        return path  # already normal: no empty, `.` or `..` segment
    return "/" + posixpath.normpath(path).lstrip("/")
