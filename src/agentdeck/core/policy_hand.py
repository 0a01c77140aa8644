"""What the hook says for a session started by hand. Pure: no I/O.

Such a session has Claude Code's own permission system (its ``--allowedTools``,
its settings' rules, its prompt), which the person chose. So by default
(``deny-and-ask``) the hook enforces only what the profile says explicitly:
its deny rules (the deck's secrets among them, and tools it disables) and its
ask rules. When none matches, the hook gives no decision and Claude Code's own
rules decide; the profile's allow rules and default are not applied. ``full``
is the opt-in to govern such a session like an agent agentdeck runs: every
call gets the profile's decision, its default included.

A call that cannot be judged with confidence (a Bash line the splitter does
not understand, an input without its path) could be dodging a specifier deny
or ask rule for its tool: then it gets the profile's answer for such calls
(ask, or deny under a deny-by-default profile), never silence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from agentdeck.core.policy import Decision, Grant, Profile, Verdict, decide


class HookGovernance(StrEnum):
    """How much of a profile the hook applies to a session started by hand."""

    DENY_AND_ASK = "deny-and-ask"
    FULL = "full"


def hand_verdict(
    profile: Profile,
    tool: str,
    tool_input: Mapping[str, Any],
    *,
    workspace: str,
    home: str,
    grants: Sequence[Grant] = (),
    governance: HookGovernance = HookGovernance.DENY_AND_ASK,
) -> Verdict | None:
    """The verdict the hook answers with, or None: no decision (Claude Code's own)."""

    def judged(by: Profile) -> Verdict:
        return decide(by, tool, tool_input, workspace=workspace, home=home, grants=grants)

    if governance is HookGovernance.FULL:
        return judged(profile)
    # Without allow rules and with an allow default, only a deny or ask rule (or a
    # tool the profile disables) gives anything but allow, or a call that cannot
    # be judged: it asks, with no rule.
    bare = dataclasses.replace(profile, allow=(), default=Decision.ALLOW)
    verdict = judged(bare)
    if verdict.decision is Decision.ALLOW:
        return None
    if verdict.decision is Decision.DENY or verdict.rule is not None:
        return verdict
    deny_grants = [g.parsed for g in grants if g.decision is Decision.DENY]
    guarded = any(
        not rule.is_bare and rule.covers_tool(tool)
        for rule in (*profile.deny, *profile.ask, *deny_grants)
    )
    if not guarded:
        return None
    # The profile's own words for such a call (its allow rules cannot apply when guarded).
    return judged(profile)
