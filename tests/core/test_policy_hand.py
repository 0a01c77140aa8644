"""What the hook says for a session started by hand (``core.policy_hand``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from agentdeck.core.policy import Decision, Grant, decide, profile_from_dict
from agentdeck.core.policy_hand import HookGovernance, hand_verdict
from tests.core.test_policy_properties import HOME, WS, calls, defaults, rules

FULL = HookGovernance.FULL


def profile(**data: Any) -> Any:
    return profile_from_dict({"default": "ask", **data}, "p.yaml")


def hand(p: Any, tool: str, tool_input: dict[str, Any], **kw: Any) -> Any:
    return hand_verdict(p, tool, tool_input, workspace=WS, home=HOME, **kw)


def test_a_call_no_deny_or_ask_rule_matches_gets_no_decision() -> None:
    """The user's own rules (``--allowedTools 'mcp__mem__*'``) decide it; it
    used to be the profile default's "ask", which ``-p`` turns into a denial."""
    p = profile(allow=["Bash(ls:*)"])
    assert hand(p, "mcp__mem__memory_search", {"query": "x"}) is None
    assert hand(p, "Bash", {"command": "make"}) is None
    assert hand(p, "Bash", {"command": "ls"}) is None  # an allow rule gives no decision either
    full = hand(p, "mcp__mem__memory_search", {"query": "x"}, governance=FULL)
    assert full.decision is Decision.ASK and "defaults to ask" in full.reason


def test_deny_and_explicit_ask_rules_are_enforced() -> None:
    p = profile(deny=["Bash(rm:*)"], ask=["Bash(git push:*)"], allow=["Bash"])
    denied = hand(p, "Bash", {"command": "cd x && rm -rf y"})
    assert (denied.decision, denied.rule) == (Decision.DENY, "Bash(rm:*)")
    asked = hand(p, "Bash", {"command": "git push"})
    assert (asked.decision, asked.rule) == (Decision.ASK, "Bash(git push:*)")


def test_a_tool_the_profile_disables_or_does_not_enable_is_denied() -> None:
    assert hand(profile(disabled_tools=["WebFetch"]), "WebFetch", {"url": "https://x"}).decision
    assert (
        hand(profile(enabled_tools=["Read"]), "Bash", {"command": "ls"}).decision is Decision.DENY
    )


def test_a_deny_grant_is_enforced() -> None:
    grants = [Grant(rule="Bash(curl:*)", decision=Decision.DENY)]
    verdict = hand(profile(), "Bash", {"command": "curl x"}, grants=grants)
    assert verdict.decision is Decision.DENY and verdict.source == "grant"


@pytest.mark.parametrize(("default", "expected"), [("ask", Decision.ASK), ("deny", Decision.DENY)])
def test_a_call_that_could_dodge_a_deny_rule_is_never_left_alone(
    default: str, expected: Decision
) -> None:
    """A Bash line the splitter does not understand could hide ``rm``."""
    p = profile(deny=["Bash(rm:*)"], default=default)
    verdict = hand(p, "Bash", {"command": "for f in *; do rm $f; done"})
    assert verdict.decision is expected and "cannot be judged" in verdict.reason
    # Where no specifier rule guards the tool, there is nothing to dodge.
    assert hand(profile(), "Bash", {"command": "for f in *; do echo $f; done"}) is None


@given(rules, rules, rules, defaults, calls)
def test_the_hook_never_allows_and_never_softens_a_deny_or_an_ask_rule(
    allow: list[str],
    ask: list[str],
    deny: list[str],
    default: str,
    call: tuple[str, dict[str, str]],
) -> None:
    tool, inp = call
    p = profile(allow=allow, ask=ask, deny=deny, default=default)
    full = decide(p, tool, inp, workspace=WS, home=HOME)
    verdict = hand(p, tool, inp)
    assert hand(p, tool, inp, governance=FULL) == full
    if verdict is None:
        # Only what no deny or ask rule said: the default, or an allow rule.
        assert full.decision is Decision.ALLOW or full.rule is None
        assert full.decision is not Decision.DENY or full.rule is None
        return
    assert verdict.decision is not Decision.ALLOW
    assert verdict.reason.strip()
    if full.decision is Decision.DENY and full.rule is not None:
        assert verdict == full  # deny wins, with its rule and reason
