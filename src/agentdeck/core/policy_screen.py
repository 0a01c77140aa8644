"""A tier's screen: which of its rules need to be tried for a unit at all. Pure.

``decide`` tries a tier's rules one by one, in order, and the first that matches
decides. Most calls match none (a Bash call under a shipped profile walked some
30 deny rules; a Read some 12 path rules). A screen holds the tier's *plain*
rules as one pattern each way they can match:

* a ``Bash(…)`` rule (``Rule`` itself, not a subclass) matches a unit when its
  pattern fully matches one of the unit's texts: all of them as one alternation;
* a ``Read(…)`` / ``Edit(…)`` rule matches a file (not a searched directory)
  when its pattern fully matches the path relative to its anchor: one
  alternation per anchor (workspace, home, root).

When the screen passes a unit, the tier is walked whole, as before; when it does
not, none of the plain rules can match it, and only the tier's other entries
(bare rules, the deck's secrets, a directory's search) are tried, in the same
order. The first match is the same either way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from agentdeck.core.policy_paths import Anchor, PathPattern
from agentdeck.core.policy_rules import Rule, Unit


class _HasRule(Protocol):
    @property
    def rule(self) -> Rule: ...


E = TypeVar("E", bound=_HasRule)


def _plain_bash(rule: Rule) -> bool:
    return type(rule) is Rule and rule._bash is not None


def _plain_path(rule: Rule) -> bool:
    return type(rule) is Rule and rule._path is not None


@dataclass(frozen=True)
class Screen(Generic[E]):
    entries: list[E]  # the whole tier, in order
    others: list[E]  # the entries no pattern stands for, in order
    bash: re.Pattern[str] | None  # every plain Bash rule's pattern
    paths: tuple[PathPattern, ...]  # every plain path rule's pattern, one per anchor

    def walk(self, unit: Unit, texts: tuple[str, ...], *, workspace: str, home: str) -> list[E]:
        """The entries to try for ``unit`` (``texts``: the view the tier's rules see)."""
        if self.bash is not None and any(self.bash.fullmatch(t) for t in texts):
            return self.entries
        if self.paths and unit.path is not None:
            if unit.directory:  # a search: path rules look beyond a full match
                return self.entries
            for pattern in self.paths:
                if pattern.matches(unit.path, workspace=workspace, home=home):
                    return self.entries
        return self.others


def screen_of(entries: Sequence[E]) -> Screen[E]:
    """The screen of a tier of ``entries`` (see the module doc)."""
    bash = [e.rule._bash.pattern for e in entries if e.rule._bash and _plain_bash(e.rule)]
    paths: dict[Anchor, list[str]] = {}
    for e in entries:
        if e.rule._path is not None and _plain_path(e.rule):
            paths.setdefault(e.rule._path.anchor, []).append(e.rule._path.regex.pattern)
    others = [e for e in entries if not (_plain_bash(e.rule) or _plain_path(e.rule))]
    return Screen(
        entries=list(entries),
        others=others,
        bash=_either(bash) if bash else None,
        paths=tuple(PathPattern(a, False, "", _either(found)) for a, found in paths.items()),
    )


def _either(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.DOTALL)
